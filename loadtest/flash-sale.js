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
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import { BASE_URL, buyBody, buyParams, drainedAudit, endSKU, envInt, errorCode, judgeAudit, openSale, seedSKU, shopperHeaders, summary } from './lib.js';

const VUS = envInt('VUS', 2000);
const STOCK = envInt('STOCK', 10);
const START_DELAY_MS = envInt('START_DELAY_MS', 2000);
const DRAIN_TIMEOUT = envInt('DRAIN_TIMEOUT', 60);
const ROOM = __ENV.ROOM === '1';
const ROOM_RATE = envInt('ROOM_RATE', 200);

const accepted = new Counter('buy_accepted');
const soldOut = new Counter('buy_sold_out');
const unexpected = new Counter('buy_unexpected');
const admitted = new Counter('room_admitted');

export const options = {
  scenarios: {
    crowd: { executor: 'per-vu-iterations', vus: VUS, iterations: 1, maxDuration: '2m' },
  },
  thresholds: {
    checks: ['rate==1'],
    buy_accepted: [`count==${STOCK}`],
    buy_unexpected: ['count==0'],
    audit_ok: ['rate==1'],
  },
  setupTimeout: '60s',
  teardownTimeout: `${DRAIN_TIMEOUT + 30}s`,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'],
};

export function setup() {
  if (VUS < STOCK) fail(`VUS (${VUS}) must be at least STOCK (${STOCK}): each shopper buys one unit`);
  // A shared start instant: every VU is initialised by now, so they all fire together.
  const startAt = Date.now() + START_DELAY_MS;
  const room = ROOM
    ? {
        starts_at: new Date(startAt).toISOString(),
        waiting_room: { opens_at: new Date(Date.now() - 1000).toISOString(), mode: 'random', admit_per_second: ROOM_RATE, pass_ttl: '30s' },
      }
    : {};
  const sku = seedSKU(ROOM ? 'k6 flash sale (waiting room)' : 'k6 flash sale', STOCK, 1, 10, room);
  return { sku: sku.id, startAt: startAt, run: `${Date.now().toString(36)}` };
}

// waitTurn joins the SKU's waiting room and polls it as Retry-After says
// until the shopper is admitted (their pass) or the room says sold_out or
// closed (null).
function waitTurn(sku, user) {
  const queue = `${BASE_URL}/api/v1/skus/${sku}/queue`;
  const params = (name) => ({ headers: shopperHeaders(user), tags: { name: name }, timeout: '30s' });
  let r = http.post(queue, null, params('POST /api/v1/skus/:id/queue'));
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
    r = http.get(queue, params('GET /api/v1/skus/:id/queue'));
  }
}

export default function (data) {
  // The shop front: the shopper loads the list of sales and opens this one.
  const opened = openSale(data.sku);
  check(opened, { 'the sale is open': (s) => s !== null });
  const user = `k6-${data.run}-${exec.vu.idInTest}`;
  let pass;
  if (ROOM) {
    pass = waitTurn(data.sku, user);
    if (!pass) return;
  } else {
    const wait = data.startAt - Date.now();
    if (wait > 0) sleep(wait / 1000);
  }
  const r = http.post(`${BASE_URL}/api/v1/orders`, buyBody(data.sku, pass), buyParams(user));
  const code = r.status === 409 ? errorCode(r) : '';
  if (r.status === 202) accepted.add(1);
  else if (code === 'sold_out') soldOut.add(1);
  else unexpected.add(1, { status: String(r.status) });
  check(r, { '202 accepted or 409 sold_out': () => r.status === 202 || code === 'sold_out' });
}

export function teardown(data) {
  endSKU(data.sku);
  const rep = drainedAudit(data.sku, DRAIN_TIMEOUT);
  if (!judgeAudit(rep, { orders: STOCK, sold: STOCK })) {
    exec.test.abort(`audit of SKU ${data.sku} failed`);
  }
}

export function handleSummary(data) {
  const c = (m) => (data.metrics[m] ? data.metrics[m].values.count : 0);
  return summary(data, `flash sale: ${VUS} shoppers, ${STOCK} units`, [
    ['202 accepted', `${c('buy_accepted')} (want ${STOCK})`],
    ['409 sold_out (with ROOM=1: the room\'s sold_out or closed)', c('buy_sold_out')],
    ['admitted by the waiting room (ROOM=1)', c('room_admitted')],
    ['other answers', `${c('buy_unexpected')} (want 0; 503 busy counts here)`],
  ]);
}
