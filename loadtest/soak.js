// soak.js: hours of ordinary traffic through the whole order lifecycle, for
// operators watching memory, connections, queue depth and lag over time (not
// for CI). RATE shoppers per second for DURATION, each a distinct user: buy,
// poll the order until it is persisted, then pay (PAY_PCT %), cancel
// (CANCEL_PCT %) or leave it to expire after order.payment_timeout. The SKU
// has STOCK units (a load-test SKU, hidden from the shop's list). Thresholds
// on latency and unexpected answers; teardown() ends the sale, waits for the
// drain and requires a consistent audit with sold == orders that are pending
// or paid.
//
//   BASE_URL=... ADMIN_TOKEN=... RATE=100 DURATION=2h k6 run loadtest/soak.js
import http from 'k6/http';
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter, Trend } from 'k6/metrics';
import { BASE_URL, buyBody, buyParams, drainedAudit, endSKU, env, envInt, judgeAudit, minutes, openSale, seedSKU, shopperHeaders, summary } from './lib.js';

const RATE = envInt('RATE', 100);
const DURATION = env('DURATION', '2h');
const STOCK = envInt('STOCK', 100000000);
const PAY_PCT = envInt('PAY_PCT', 70);
const CANCEL_PCT = envInt('CANCEL_PCT', 20);
const P99_MS = envInt('P99_MS', 250);
const DRAIN_TIMEOUT = envInt('DRAIN_TIMEOUT', 300);

const accepted = new Counter('buy_accepted');
const paid = new Counter('orders_paid');
const cancelled = new Counter('orders_cancelled');
const unexpected = new Counter('unexpected_answers');
const persistLag = new Trend('persist_lag_ms', true);

export const options = {
  scenarios: {
    soak: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: envInt('PRE_VUS', Math.max(50, RATE * 2)),
      maxVUs: envInt('MAX_VUS', Math.max(200, RATE * 10)),
    },
  },
  thresholds: {
    'http_req_duration{name:POST /api/v1/orders}': [`p(99)<${P99_MS}`],
    unexpected_answers: ['count==0'],
    persist_lag_ms: ['p(99)<5000'],
    audit_ok: ['rate==1'],
  },
  setupTimeout: '60s',
  teardownTimeout: `${DRAIN_TIMEOUT + 30}s`,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'],
};

export function setup() {
  // On sale for the run and the drain, and a few minutes more.
  const sku = seedSKU('soak', STOCK, 1, minutes(DURATION) + Math.ceil(DRAIN_TIMEOUT / 60) + 5);
  return { sku: sku.id, run: Date.now().toString(36) };
}

function shopper(user, name) {
  return { headers: shopperHeaders(user), tags: { name: name }, timeout: '30s' };
}

export default function (data) {
  const user = `k6k-${data.run}-${exec.scenario.iterationInTest}`;
  // The shop front: the list of sales, the sale's page, then the buy.
  if (!check(openSale(data.sku), { 'list: the sale is open': (s) => s !== null })) {
    unexpected.add(1, { step: 'list', status: 'missing' });
  }
  const r = http.post(`${BASE_URL}/api/v1/orders`, buyBody(data.sku), buyParams(user));
  if (!check(r, { 'buy: 202': () => r.status === 202 })) {
    unexpected.add(1, { step: 'buy', status: String(r.status) });
    return;
  }
  accepted.add(1);
  const id = r.json('order_id');
  const start = Date.now();
  let status = 'queued';
  while (status === 'queued' && Date.now() - start < 30000) {
    sleep(0.2);
    const g = http.get(`${BASE_URL}/api/v1/orders/${id}`, shopper(user, 'GET /api/v1/orders/:id'));
    if (g.status !== 200) {
      unexpected.add(1, { step: 'get', status: String(g.status) });
      return;
    }
    status = g.json('status');
  }
  if (!check(status, { 'order persisted': (s) => s === 'pending_payment' })) {
    unexpected.add(1, { step: 'persist', status: status });
    return;
  }
  persistLag.add(Date.now() - start);
  const dice = Math.random() * 100;
  if (dice < PAY_PCT) {
    const p = http.post(`${BASE_URL}/api/v1/orders/${id}/pay`, null, shopper(user, 'POST /api/v1/orders/:id/pay'));
    if (check(p, { 'pay: 200': () => p.status === 200 })) paid.add(1);
    else unexpected.add(1, { step: 'pay', status: String(p.status) });
  } else if (dice < PAY_PCT + CANCEL_PCT) {
    const c = http.post(`${BASE_URL}/api/v1/orders/${id}/cancel`, null, shopper(user, 'POST /api/v1/orders/:id/cancel'));
    if (check(c, { 'cancel: 200': () => c.status === 200 })) cancelled.add(1);
    else unexpected.add(1, { step: 'cancel', status: String(c.status) });
  }
}

export function teardown(data) {
  endSKU(data.sku);
  const rep = drainedAudit(data.sku, DRAIN_TIMEOUT);
  if (!judgeAudit(rep, {})) {
    exec.test.abort(`audit of SKU ${data.sku} failed`);
  }
}

export function handleSummary(data) {
  const c = (m) => (data.metrics[m] ? data.metrics[m].values.count : 0);
  return summary(data, `soak: ${RATE}/s for ${DURATION}`, [
    ['202 accepted', c('buy_accepted')],
    ['paid', c('orders_paid')],
    ['cancelled', c('orders_cancelled')],
    ['unexpected', `${c('unexpected_answers')} (want 0)`],
    ['dropped', c('dropped_iterations')],
  ]);
}
