// flash-sale.js: a flash crowd. setup() seeds a fresh load-test SKU with
// STOCK units (one per shopper; hidden from the shop's list); VUS shoppers,
// each a distinct user, load the list of sales as a shop front does
// (GET /api/v1/skus), open the sale's page, wait for the same start instant
// and buy once. Every answer must be 202 (accepted) or 409 sold_out; exactly
// STOCK are accepted. teardown() ends the sale, waits for the drain and
// fails the run unless the audit shows orders == sold == stock_total,
// consistent and no violations.
//
//   BASE_URL=http://localhost:8080 ADMIN_TOKEN=... VUS=2000 STOCK=10 k6 run loadtest/flash-sale.js
//
// With ROOM=1 the SKU has a waiting room (docs/shop/waiting-room.md) that
// opens at setup: every shopper joins it at once, is drawn at the start,
// polls as Retry-After says and buys with the pass it is given; the room
// answers sold_out to the rest once the units are gone. ROOM_RATE sets
// its admit_per_second (default 200).
//
// With DROP=n (docs/shop/drops.md) the STOCK units are spread over n SKUs,
// the sizes of one product, made a drop (per_user_limit 1 over them all)
// whose one room opens at setup: every shopper joins the drop's room, polls
// as Retry-After says, and once admitted buys a size chosen at random,
// trying the others in turn while they answer sold_out (which leaves the
// pass unspent). A shopper who bought tries its pass once more on another
// size, which must be refused. teardown() ends the drop, audits every size
// and counts the orders per shopper over them: exactly STOCK, none twice.
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import {
  BASE_URL, adminParams, buyBody, buyParams, drainedAudit, endSKU, envInt, errorCode, judgeAudit, openSale, seedSKU, shopperHeaders,
  sumAudits, summary,
} from './lib.js';

const VUS = envInt('VUS', 2000);
const STOCK = envInt('STOCK', 10);
const START_DELAY_MS = envInt('START_DELAY_MS', 2000);
const DRAIN_TIMEOUT = envInt('DRAIN_TIMEOUT', 60);
const DROP = envInt('DROP', 0);
const ROOM = __ENV.ROOM === '1' || DROP > 0;
const ROOM_RATE = envInt('ROOM_RATE', 200);

const accepted = new Counter('buy_accepted');
const soldOut = new Counter('buy_sold_out');
const unexpected = new Counter('buy_unexpected');
const admitted = new Counter('room_admitted');
// A drop's: buys of a size answered sold_out, after which the shopper tries
// another; a spent pass accepted again; shoppers with two orders over the
// drop's sizes in the orders teardown() lists.
const sizeSoldOut = new Counter('drop_size_sold_out');
const spentAccepted = new Counter('drop_spent_pass_accepted');
const twoOrders = new Counter('drop_shoppers_with_two_orders');

export const options = {
  scenarios: {
    crowd: { executor: 'per-vu-iterations', vus: VUS, iterations: 1, maxDuration: '2m' },
  },
  thresholds: {
    checks: ['rate==1'],
    buy_accepted: [`count==${STOCK}`],
    buy_unexpected: ['count==0'],
    audit_ok: ['rate==1'],
    drop_spent_pass_accepted: ['count==0'],
    drop_shoppers_with_two_orders: ['count==0'],
  },
  setupTimeout: '60s',
  teardownTimeout: `${DRAIN_TIMEOUT + 30}s`,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'],
};

export function setup() {
  if (VUS < STOCK) fail(`VUS (${VUS}) must be at least STOCK (${STOCK}): each shopper buys one unit`);
  // A shared start instant: every VU is initialised by now, so they all fire together.
  const startAt = Date.now() + START_DELAY_MS;
  if (DROP > 0) return seedDrop(startAt);
  const room = ROOM
    ? {
        starts_at: new Date(startAt).toISOString(),
        waiting_room: { opens_at: new Date(Date.now() - 1000).toISOString(), mode: 'random', admit_per_second: ROOM_RATE, pass_ttl: '30s' },
      }
    : {};
  const sku = seedSKU(ROOM ? 'k6 flash sale (waiting room)' : 'k6 flash sale', STOCK, 1, 10, room);
  return { sku: sku.id, startAt: startAt, run: `${Date.now().toString(36)}` };
}

// seedDrop creates DROP hidden load-test SKUs sharing the STOCK units (the
// first get the remainder), on sale from startAt, then the drop of them,
// whose room opens now. Its id is its first SKU's.
function seedDrop(startAt) {
  if (STOCK < DROP) fail(`STOCK (${STOCK}) must be at least DROP (${DROP}): every size has a unit`);
  // One window for every size, as a drop's SKUs share.
  const window = { starts_at: new Date(startAt).toISOString(), ends_at: new Date(startAt + 10 * 60 * 1000).toISOString() };
  const sizes = [];
  for (let i = 0; i < DROP; i++) {
    const units = Math.floor(STOCK / DROP) + (i < STOCK % DROP ? 1 : 0);
    sizes.push(seedSKU(`k6 drop, size ${40 + i}`, units, 1, 10, window).id);
  }
  const body = JSON.stringify({
    name: 'loadtest: k6 drop',
    skus: sizes,
    per_user_limit: 1,
    waiting_room: { opens_at: new Date(Date.now() - 1000).toISOString(), mode: 'random', admit_per_second: ROOM_RATE, pass_ttl: '30s' },
  });
  const r = http.post(`${BASE_URL}/admin/drops`, body, adminParams('admin drop'));
  if (r.status !== 201) fail(`creating the drop: ${r.status} ${r.body}`);
  console.log(`drop ${r.json('id')} of SKUs ${sizes.join(', ')}, ${STOCK} units`);
  return { sku: r.json('id'), sizes: sizes, startAt: startAt, run: `${Date.now().toString(36)}` };
}

// waitTurn joins the waiting room at path (a SKU's or a drop's) and polls
// it as Retry-After says until the shopper is admitted (their pass) or the
// room says sold_out or closed (null).
function waitTurn(path, user) {
  const queue = `${BASE_URL}${path}/queue`;
  const name = path.replace(/\d+$/, ':id') + '/queue';
  const params = (method) => ({ headers: shopperHeaders(user), tags: { name: `${method} ${name}` }, timeout: '30s' });
  let r = http.post(queue, null, params('POST'));
  for (;;) {
    if (!check(r, { 'the waiting room answers 200': () => r.status === 200 })) {
      unexpected.add(1, { status: String(r.status) });
      return null;
    }
    const status = r.json('status');
    if (status === 'admitted') {
      admitted.add(1);
      return r.json('pass');
    }
    if (status === 'sold_out' || status === 'closed') {
      soldOut.add(1);
      return null;
    }
    sleep(Math.max(Number(r.headers['Retry-After'] || '1'), 1));
    r = http.get(queue, params('GET'));
  }
}

// buy places one order of sku and counts its answer: true if accepted,
// false if sold out, null for anything else.
function buy(sku, user, pass, last) {
  const r = http.post(`${BASE_URL}/api/v1/orders`, buyBody(sku, pass), buyParams(user));
  const code = r.status === 409 ? errorCode(r) : '';
  check(r, { '202 accepted or 409 sold_out': () => r.status === 202 || code === 'sold_out' });
  if (r.status === 202) {
    accepted.add(1);
    return true;
  }
  if (code === 'sold_out') {
    if (last) soldOut.add(1);
    else sizeSoldOut.add(1);
    return false;
  }
  unexpected.add(1, { status: String(r.status) });
  return null;
}

// buySize buys one of the drop's sizes with pass: one chosen at random,
// then the others in turn while they answer sold_out. Having bought, it
// tries the pass on another size once: the pass is spent.
function buySize(sizes, user, pass) {
  const first = Math.floor(Math.random() * sizes.length);
  for (let k = 0; k < sizes.length; k++) {
    const got = buy(sizes[(first + k) % sizes.length], user, pass, k === sizes.length - 1);
    if (got === false) continue;
    if (got === true && sizes.length > 1) {
      const r = http.post(`${BASE_URL}/api/v1/orders`, buyBody(sizes[(first + k + 1) % sizes.length], pass),
        Object.assign(buyParams(user), { tags: { name: 'POST /api/v1/orders (spent pass)' } }));
      if (r.status === 202) spentAccepted.add(1);
      const code = errorCode(r);
      check(r, { 'a spent pass buys no other size': () => code === 'pass_invalid' || code === 'sold_out' });
    }
    return;
  }
}

export default function (data) {
  // The shop front: the shopper loads the list of sales and opens this one.
  const opened = openSale(data.sku);
  check(opened, { 'the sale is open': (s) => s !== null });
  const user = `k6-${data.run}-${exec.vu.idInTest}`;
  let pass;
  if (ROOM) {
    pass = waitTurn(DROP > 0 ? `/api/v1/drops/${data.sku}` : `/api/v1/skus/${data.sku}`, user);
    if (!pass) return;
  } else {
    const wait = data.startAt - Date.now();
    if (wait > 0) sleep(wait / 1000);
  }
  buySize(data.sizes || [data.sku], user, pass);
}

export function teardown(data) {
  // Ending a drop's first SKU ends the drop.
  endSKU(data.sku);
  const sizes = data.sizes || [data.sku];
  const rep = sumAudits(sizes.map((id) => drainedAudit(id, DRAIN_TIMEOUT)));
  if (sizes.length > 1) countOrdersPerShopper(sizes);
  if (!judgeAudit(rep, { orders: STOCK, sold: STOCK })) {
    exec.test.abort(`audit of SKU(s) ${sizes.join(', ')} failed`);
  }
}

// countOrdersPerShopper lists the orders of the drop's sizes
// (GET /admin/orders) and counts the shoppers with more than one.
function countOrdersPerShopper(sizes) {
  const per = new Map();
  for (const id of sizes) {
    let cursor = '';
    do {
      const q = `sku_id=${id}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const r = http.get(`${BASE_URL}/admin/orders?${q}`, adminParams('admin orders'));
      if (!check(r, { 'teardown: the orders are listed': () => r.status === 200 })) return;
      for (const o of r.json('items')) per.set(o.user_id, (per.get(o.user_id) || 0) + 1);
      cursor = r.json('next_cursor') || '';
    } while (cursor !== '');
  }
  let twice = 0;
  let listed = 0;
  for (const n of per.values()) {
    listed += n;
    if (n > 1) twice++;
  }
  check(listed, { [`teardown: the ${STOCK} orders of the drop are listed`]: () => listed === STOCK });
  twoOrders.add(twice);
  check(per, { 'no shopper with two orders over the drop': () => twice === 0 });
}

export function handleSummary(data) {
  const c = (m) => (data.metrics[m] ? data.metrics[m].values.count : 0);
  const lines = [
    ['202 accepted', `${c('buy_accepted')} (want ${STOCK})`],
    ['409 sold_out (with ROOM=1: the room\'s sold_out or closed)', c('buy_sold_out')],
    ['admitted by the waiting room (ROOM=1)', c('room_admitted')],
    ['other answers', `${c('buy_unexpected')} (want 0; 503 busy counts here)`],
  ];
  if (DROP > 0) {
    lines.push(
      ['sizes', `${data.setup_data ? data.setup_data.sizes.join(', ') : '-'} (drop ${data.setup_data ? data.setup_data.sku : '-'})`],
      ['409 sold_out of a size, another tried', c('drop_size_sold_out')],
      ['a spent pass accepted', `${c('drop_spent_pass_accepted')} (want 0)`],
      ['shoppers with two orders', `${c('drop_shoppers_with_two_orders')} (want 0)`],
    );
  }
  const what = DROP > 0 ? `drop of ${DROP} sizes` : 'flash sale';
  return summary(data, `${what}: ${VUS} shoppers, ${STOCK} units`, lines);
}
