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
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import { BASE_URL, buyBody, buyParams, drainedAudit, endSKU, envInt, errorCode, judgeAudit, openSale, seedSKU, summary } from './lib.js';

const VUS = envInt('VUS', 2000);
const STOCK = envInt('STOCK', 10);
const START_DELAY_MS = envInt('START_DELAY_MS', 2000);
const DRAIN_TIMEOUT = envInt('DRAIN_TIMEOUT', 60);

const accepted = new Counter('buy_accepted');
const soldOut = new Counter('buy_sold_out');
const unexpected = new Counter('buy_unexpected');

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
  const sku = seedSKU('k6 flash sale', STOCK, 1, 10);
  // A shared start instant: every VU is initialised by now, so they all fire together.
  return { sku: sku.id, startAt: Date.now() + START_DELAY_MS, run: `${Date.now().toString(36)}` };
}

export default function (data) {
  // The shop front: the shopper loads the list of sales and opens this one.
  const opened = openSale(data.sku);
  check(opened, { 'the sale is open': (s) => s !== null });
  const wait = data.startAt - Date.now();
  if (wait > 0) sleep(wait / 1000);
  const user = `k6-${data.run}-${exec.vu.idInTest}`;
  const r = http.post(`${BASE_URL}/api/v1/orders`, buyBody(data.sku), buyParams(user));
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
    ['409 sold_out', c('buy_sold_out')],
    ['other answers', `${c('buy_unexpected')} (want 0; 503 busy counts here)`],
  ]);
}
