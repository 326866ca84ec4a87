// sustained.js: a steady stream of shoppers. RATE buys per second for
// DURATION (constant arrival rate, so a slow server cannot slow the client
// down), each from a distinct user, against a SKU with STOCK units (large
// enough never to sell out). Thresholds: p(99) buy latency under P99_MS and
// under ERROR_RATE of answers other than 202. teardown() ends the sale (a
// load-test SKU, hidden from the shop's list), waits for the drain and checks
// the audit: sold == persisted orders == units taken in Redis, consistent, no
// violations.
//
//   BASE_URL=... ADMIN_TOKEN=... RATE=2000 DURATION=60s k6 run loadtest/sustained.js
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import { BASE_URL, buyBody, buyParams, drainedAudit, endSKU, env, envInt, errorCode, judgeAudit, minutes, seedSKU, summary } from './lib.js';

const RATE = envInt('RATE', 1000);
const DURATION = env('DURATION', '60s');
const STOCK = envInt('STOCK', 100000000);
const P99_MS = envInt('P99_MS', 250);
const ERROR_RATE = parseFloat(env('ERROR_RATE', '0.001'));
const DRAIN_TIMEOUT = envInt('DRAIN_TIMEOUT', 120);

const accepted = new Counter('buy_accepted');
const refused = new Counter('buy_refused');

export const options = {
  scenarios: {
    steady: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: envInt('PRE_VUS', Math.min(2000, Math.max(50, Math.ceil(RATE / 10)))),
      maxVUs: envInt('MAX_VUS', Math.max(200, RATE)),
    },
  },
  thresholds: {
    'http_req_duration{name:POST /api/v1/orders}': [`p(99)<${P99_MS}`],
    'checks{check:buy}': [`rate>=${1 - ERROR_RATE}`],
    dropped_iterations: [`count<=${Math.ceil(RATE * 0.01)}`],
    audit_ok: ['rate==1'],
  },
  setupTimeout: '60s',
  teardownTimeout: `${DRAIN_TIMEOUT + 30}s`,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'],
};

export function setup() {
  // On sale for the run and the drain, and a few minutes more.
  const sku = seedSKU('sustained', STOCK, 1, minutes(DURATION) + Math.ceil(DRAIN_TIMEOUT / 60) + 5);
  return { sku: sku.id, run: Date.now().toString(36) };
}

export default function (data) {
  const user = `k6s-${data.run}-${exec.scenario.iterationInTest}`;
  const r = http.post(`${BASE_URL}/api/v1/orders`, buyBody(data.sku), buyParams(user));
  if (r.status === 202) accepted.add(1);
  else refused.add(1, { status: String(r.status), error: errorCode(r) });
  check(r, { '202 accepted': () => r.status === 202 }, { check: 'buy' });
}

export function teardown(data) {
  endSKU(data.sku);
  const rep = drainedAudit(data.sku, DRAIN_TIMEOUT);
  const taken = rep && rep.redis_left !== null ? rep.stock_total - rep.redis_left : undefined;
  if (!judgeAudit(rep, { orders: taken, sold: taken })) {
    exec.test.abort(`audit of SKU ${data.sku} failed`);
  }
}

export function handleSummary(data) {
  const c = (m) => (data.metrics[m] ? data.metrics[m].values.count : 0);
  return summary(data, `sustained: ${RATE}/s for ${DURATION}`, [
    ['202 accepted', c('buy_accepted')],
    ['refused', `${c('buy_refused')} (any answer but 202)`],
    ['dropped', `${c('dropped_iterations')} iterations the client could not start in time`],
  ]);
}
