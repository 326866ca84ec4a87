// Shared helpers of the seckill k6 scenarios: settings from the environment,
// seeding a SKU through the admin API and ending it, waiting for the drain,
// checking the audit, and the end-of-test summary.
//
// A scenario's SKU is a load test's: its name starts with "loadtest: ", it
// is hidden from the shop's list (GET /api/v1/skus), teardown() ends its
// sale (POST /admin/skus/{id}/end), and the summary names its id for
// `seckill verify --sku`. Its window outlasts the run by a little only, so a
// run stopped before its teardown leaves nothing on sale for long.
import http from 'k6/http';
import crypto from 'k6/crypto';
import encoding from 'k6/encoding';
import { check, fail, sleep } from 'k6';
import { Gauge, Rate } from 'k6/metrics';

export function env(name, def) {
  const v = __ENV[name];
  return v === undefined || v === '' ? def : v;
}

export function envInt(name, def) {
  const v = env(name, '');
  if (v === '') return def;
  const n = parseInt(v, 10);
  if (isNaN(n)) fail(`${name}=${v}: not a number`);
  return n;
}

export const BASE_URL = env('BASE_URL', 'http://localhost:8080').replace(/\/+$/, '');
export const ADMIN_TOKEN = env('ADMIN_TOKEN', '');
// With JWT_SECRET set (the server's auth.jwt_secret, auth.mode jwt) shoppers
// send HS256 tokens signed here; otherwise X-User-ID (auth.mode header).
export const JWT_SECRET = env('JWT_SECRET', '');
const JWT_ISSUER = env('JWT_ISSUER', '');
const JWT_AUDIENCE = env('JWT_AUDIENCE', '');

// Audit figures, set by teardown and shown by the summary.
export const auditOK = new Rate('audit_ok');
const auditOrders = new Gauge('audit_orders');
const auditSold = new Gauge('audit_sold');
const auditStock = new Gauge('audit_stock_total');
const auditQueued = new Gauge('audit_queued');
const auditRedisLeft = new Gauge('audit_redis_left');
const drainWait = new Gauge('audit_drain_wait_ms');

// adminParams are the parameters of an admin API call tagged tag.
export function adminParams(tag) {
  return {
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    tags: { name: tag },
    timeout: '30s',
  };
}

// SKU_PREFIX starts the name of every SKU a scenario seeds.
export const SKU_PREFIX = 'loadtest: ';

// seedSKU creates a fresh load-test SKU (hidden, named SKU_PREFIX + name)
// on sale from now for `minutes` and returns it.
export function seedSKU(name, stock, perUserLimit, minutes, extra) {
  if (ADMIN_TOKEN === '') fail('ADMIN_TOKEN is not set: the scenario seeds its SKU through the admin API');
  const now = new Date();
  const body = JSON.stringify(Object.assign({
    name: SKU_PREFIX + name,
    hidden: true,
    price_cents: 99900,
    stock: stock,
    per_user_limit: perUserLimit,
    starts_at: new Date(now.getTime() - 1000).toISOString(),
    ends_at: new Date(now.getTime() + minutes * 60 * 1000).toISOString(),
  }, extra || {}));
  const r = http.post(`${BASE_URL}/admin/skus`, body, adminParams('admin seed'));
  if (r.status !== 201) fail(`seeding the SKU: ${r.status} ${r.body}`);
  const sku = r.json();
  console.log(`seeded SKU ${sku.id} (${sku.name}, hidden), on sale until ${sku.ends_at} or the end of the run`);
  return sku;
}

// endSKU ends the sale of the scenario's SKU (POST /admin/skus/{id}/end);
// teardown() calls it first, so that the run leaves nothing on sale even
// when its audit then fails. Orders taken before stay valid.
export function endSKU(skuID) {
  const r = http.post(`${BASE_URL}/admin/skus/${skuID}/end`, null, adminParams('admin end'));
  const ok = check(r, { 'teardown: the sale is ended': () => r.status === 200 });
  if (!ok) console.error(`ending SKU ${skuID}: ${r.status} ${r.body}`);
  return ok;
}

// minutes is a k6 duration ("90s", "2m", "1h30m") in minutes, rounded up.
export function minutes(duration) {
  let ms = 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let m;
  while ((m = re.exec(duration)) !== null) {
    ms += parseFloat(m[1]) * { ms: 1, s: 1000, m: 60000, h: 3600000 }[m[2]];
  }
  if (ms === 0) fail(`${duration}: not a duration such as 90s, 2m or 1h30m`);
  return Math.ceil(ms / 60000);
}

const jwtHead = encoding.b64encode(JSON.stringify({ alg: 'HS256', typ: 'JWT' }), 'rawurl');
let tokens = new Map(); // per VU: user -> token

// jwt returns an HS256 token for user, valid for an hour from its signing.
function jwt(user) {
  const now = Math.floor(Date.now() / 1000);
  const hit = tokens.get(user);
  if (hit && hit.exp - now > 300) return hit.token;
  const claims = { sub: user, iat: now, exp: now + 3600 };
  if (JWT_ISSUER !== '') claims.iss = JWT_ISSUER;
  if (JWT_AUDIENCE !== '') claims.aud = JWT_AUDIENCE;
  const body = `${jwtHead}.${encoding.b64encode(JSON.stringify(claims), 'rawurl')}`;
  const token = `${body}.${crypto.hmac('sha256', JWT_SECRET, body, 'base64rawurl')}`;
  if (tokens.size >= 10000) tokens = new Map();
  tokens.set(user, { token: token, exp: claims.exp });
  return token;
}

// shopperHeaders identify user the way the server is configured to.
export function shopperHeaders(user) {
  if (JWT_SECRET === '') return { 'X-User-ID': user };
  return { Authorization: `Bearer ${jwt(user)}` };
}

// buyParams are the request parameters of one shopper's buy.
export function buyParams(user) {
  return {
    headers: Object.assign({ 'Content-Type': 'application/json' }, shopperHeaders(user)),
    tags: { name: 'POST /api/v1/orders' },
    timeout: '30s',
  };
}

// openSale does what a shopper does before buying: loads the first page of
// the sales a shop front lists (GET /api/v1/skus), which leaves the
// load test's hidden SKU out, then opens the sale's own page
// (GET /api/v1/skus/{id}). It returns that SKU, or null.
export function openSale(skuID) {
  const list = http.get(`${BASE_URL}/api/v1/skus?limit=100`, { tags: { name: 'GET /api/v1/skus' }, timeout: '30s' });
  check(list, { 'the shop lists its sales': () => list.status === 200 });
  if (list.status === 200 && list.json().items.some((s) => s.id === skuID)) {
    console.error(`SKU ${skuID} is in the shop's list: a load test's SKU must be hidden`);
    return null;
  }
  const r = http.get(`${BASE_URL}/api/v1/skus/${skuID}`, { tags: { name: 'GET /api/v1/skus/:id' }, timeout: '30s' });
  return r.status === 200 ? r.json() : null;
}

export function buyBody(skuID, pass) {
  return JSON.stringify(pass ? { sku_id: skuID, qty: 1, pass: pass } : { sku_id: skuID, qty: 1 });
}

// errorCode is the "error" field of a JSON error body, or ''.
export function errorCode(r) {
  try {
    return r.json('error') || '';
  } catch (e) {
    return '';
  }
}

// drainedAudit polls the SKU's audit until no order is queued (or the
// timeout passes) and returns the last report.
export function drainedAudit(skuID, timeoutSec) {
  const start = Date.now();
  let rep = null;
  for (;;) {
    const r = http.get(`${BASE_URL}/admin/skus/${skuID}/audit`, adminParams('admin audit'));
    if (r.status === 200) {
      rep = r.json();
      if (rep.queued === 0 && rep.queued_orders === 0 && rep.consistent) break;
    } else {
      console.warn(`audit: ${r.status} ${r.body}`);
    }
    if (Date.now() - start > timeoutSec * 1000) {
      console.error(`audit: SKU ${skuID} still has queued orders after ${timeoutSec}s`);
      break;
    }
    sleep(0.25);
  }
  drainWait.add(Date.now() - start);
  return rep;
}

// sumAudits adds up the audits of several SKUs (a drop's sizes) into one
// report for judgeAudit: null if any is missing.
export function sumAudits(reps) {
  if (reps.some((r) => r === null)) return null;
  if (reps.length === 1) return reps[0];
  const sum = { consistent: reps.every((r) => r.consistent === true), violations: [].concat(...reps.map((r) => r.violations || [])) };
  for (const f of ['orders', 'sold', 'stock_total', 'queued', 'queued_orders', 'pending_payment', 'paid', 'dead_letters', 'duplicates']) {
    sum[f] = reps.reduce((n, r) => n + r[f], 0);
  }
  sum.redis_left = reps.some((r) => r.redis_left === null) ? null : reps.reduce((n, r) => n + r.redis_left, 0);
  return sum;
}

// judgeAudit records the audit as metrics and checks; expect may hold
// orders and sold (exact values). It returns whether every check passed.
export function judgeAudit(rep, expect) {
  if (rep === null) {
    auditOK.add(false);
    return false;
  }
  auditOrders.add(rep.orders);
  auditSold.add(rep.sold);
  auditStock.add(rep.stock_total);
  auditQueued.add(rep.queued);
  auditRedisLeft.add(rep.redis_left === null ? -1 : rep.redis_left);
  const checks = {
    'audit: nothing queued': rep.queued === 0 && rep.queued_orders === 0,
    'audit: consistent': rep.consistent === true,
    'audit: no violations': !rep.violations || rep.violations.length === 0,
    // Every scenario buys one unit per order.
    'audit: sold == pending_payment + paid orders': rep.sold === rep.pending_payment + rep.paid,
    'audit: no dead letters or duplicates': rep.dead_letters === 0 && rep.duplicates === 0,
  };
  if (expect.orders !== undefined) checks[`audit: orders == ${expect.orders}`] = rep.orders === expect.orders;
  if (expect.sold !== undefined) checks[`audit: sold == ${expect.sold}`] = rep.sold === expect.sold;
  let ok = true;
  for (const [name, pass] of Object.entries(checks)) {
    check(rep, { [name]: () => pass });
    if (!pass) ok = false;
  }
  auditOK.add(ok);
  if (!ok) console.error(`audit failed: ${JSON.stringify(rep)}`);
  return ok;
}

function fmtMs(v) {
  if (v === undefined || v === null) return '-';
  return v >= 1000 ? `${(v / 1000).toFixed(2)}s` : `${v.toFixed(1)}ms`;
}

function val(data, metric, field) {
  const m = data.metrics[metric];
  return m && m.values ? m.values[field] : undefined;
}

// summary renders the end of a run as text: requests and outcomes, latency,
// checks, thresholds and the audit. lines are extra "label: value" rows.
export function summary(data, title, lines) {
  const out = [];
  const dur = data.state ? data.state.testRunDurationMs / 1000 : 0;
  const sku = data.setup_data && data.setup_data.sku;
  out.push(
    '',
    `== ${title} ==`,
    `base url:        ${BASE_URL}`,
    `sku:             ${sku === undefined ? 'none seeded' : `${sku} (hidden, ended by teardown; seckill verify --sku ${sku})`}`,
    `run time:        ${dur.toFixed(1)}s`,
  );
  const reqs = val(data, 'http_reqs', 'count') || 0;
  out.push(`http requests:   ${reqs} (${(val(data, 'http_reqs', 'rate') || 0).toFixed(0)}/s, incl. admin calls)`);
  for (const [label, v] of lines || []) out.push(`${(label + ':').padEnd(17)}${v}`);
  const buy = 'http_req_duration{name:POST /api/v1/orders}';
  const lat = data.metrics[buy] ? buy : 'http_req_duration';
  out.push(
    `buy latency:     p50 ${fmtMs(val(data, lat, 'med'))}  p90 ${fmtMs(val(data, lat, 'p(90)'))}  ` +
      `p99 ${fmtMs(val(data, lat, 'p(99)'))}  max ${fmtMs(val(data, lat, 'max'))}`,
  );
  const passes = val(data, 'checks', 'passes') || 0;
  const fails = val(data, 'checks', 'fails') || 0;
  out.push(`checks:          ${passes} passed, ${fails} failed`);
  if (data.metrics.audit_orders) {
    out.push(
      `audit:           orders ${val(data, 'audit_orders', 'value')}, sold ${val(data, 'audit_sold', 'value')}, ` +
        `stock_total ${val(data, 'audit_stock_total', 'value')}, redis_left ${val(data, 'audit_redis_left', 'value')}, ` +
        `queued ${val(data, 'audit_queued', 'value')} (drained in ${fmtMs(val(data, 'audit_drain_wait_ms', 'value'))})`,
    );
  }
  const audit = val(data, 'audit_ok', 'rate');
  out.push(`audit verdict:   ${audit === 1 ? 'OK' : audit === undefined ? 'not run' : 'FAILED'}`);
  const broken = [];
  for (const [name, m] of Object.entries(data.metrics)) {
    for (const [expr, t] of Object.entries(m.thresholds || {})) {
      if (!t.ok) broken.push(`${name} ${expr}`);
    }
  }
  out.push(`thresholds:      ${broken.length === 0 ? 'all passed' : 'FAILED: ' + broken.join('; ')}`);
  out.push('');
  const res = { stdout: out.join('\n') + '\n' };
  const file = env('SUMMARY_JSON', '');
  if (file !== '') res[file] = JSON.stringify(data, null, 2);
  return res;
}
