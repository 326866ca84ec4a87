// spike.js: a quiet sale that jumps to SPIKE_RATE buys per second for
// SPIKE_DURATION and falls back, twice, against a SKU with STOCK units (large
// by default, so the spike hits the in-stock path). Every answer must be 202
// or 409 sold_out; 503 busy is counted separately and allowed up to
// BUSY_RATE; no other 5xx. teardown() ends the sale (a load-test SKU,
// hidden from the shop's list) and checks the audit.
//
//   BASE_URL=... ADMIN_TOKEN=... BASE_RATE=200 SPIKE_RATE=5000 k6 run loadtest/spike.js
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import { BASE_URL, buyBody, buyParams, drainedAudit, endSKU, env, envInt, errorCode, judgeAudit, minutes, seedSKU, summary } from './lib.js';

const BASE_RATE = envInt('BASE_RATE', 200);
const SPIKE_RATE = envInt('SPIKE_RATE', 5000);
const SPIKE_DURATION = env('SPIKE_DURATION', '20s');
const CALM_DURATION = env('CALM_DURATION', '30s');
const STOCK = envInt('STOCK', 100000000);
const P99_MS = envInt('P99_MS', 1000);
const BUSY_RATE = parseFloat(env('BUSY_RATE', '0.01'));
const DRAIN_TIMEOUT = envInt('DRAIN_TIMEOUT', 180);

const accepted = new Counter('buy_accepted');
const soldOut = new Counter('buy_sold_out');
const busy = new Counter('buy_busy');
const unexpected = new Counter('buy_unexpected');

const stages = [];
for (let i = 0; i < 2; i++) {
  stages.push({ target: BASE_RATE, duration: CALM_DURATION });
  stages.push({ target: SPIKE_RATE, duration: '2s' });
  stages.push({ target: SPIKE_RATE, duration: SPIKE_DURATION });
  stages.push({ target: BASE_RATE, duration: '2s' });
}
stages.push({ target: BASE_RATE, duration: CALM_DURATION });

export const options = {
  scenarios: {
    spike: {
      executor: 'ramping-arrival-rate',
      startRate: BASE_RATE,
      timeUnit: '1s',
      stages: stages,
      preAllocatedVUs: envInt('PRE_VUS', Math.min(2000, Math.max(100, Math.ceil(SPIKE_RATE / 10)))),
      maxVUs: envInt('MAX_VUS', Math.max(500, SPIKE_RATE)),
    },
  },
  thresholds: {
    'http_req_duration{name:POST /api/v1/orders}': [`p(99)<${P99_MS}`],
    'checks{check:answer}': [`rate>=${1 - BUSY_RATE}`],
    buy_unexpected: ['count==0'],
    audit_ok: ['rate==1'],
  },
  setupTimeout: '60s',
  teardownTimeout: `${DRAIN_TIMEOUT + 30}s`,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(90)', 'p(99)'],
};

export function setup() {
  // On sale for the stages and the drain, and a few minutes more.
  const run = stages.reduce((sum, s) => sum + minutes(s.duration), 0);
  const sku = seedSKU('spike', STOCK, 1, run + Math.ceil(DRAIN_TIMEOUT / 60) + 5);
  return { sku: sku.id, run: Date.now().toString(36) };
}

export default function (data) {
  const user = `k6p-${data.run}-${exec.scenario.iterationInTest}`;
  const r = http.post(`${BASE_URL}/api/v1/orders`, buyBody(data.sku), buyParams(user));
  const code = r.status >= 400 ? errorCode(r) : '';
  if (r.status === 202) accepted.add(1);
  else if (code === 'sold_out') soldOut.add(1);
  else if (r.status === 503 && code === 'busy') busy.add(1);
  else unexpected.add(1, { status: String(r.status) });
  check(r, { '202 or 409 sold_out': () => r.status === 202 || code === 'sold_out' }, { check: 'answer' });
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
  return summary(data, `spike: ${BASE_RATE}/s -> ${SPIKE_RATE}/s`, [
    ['202 accepted', c('buy_accepted')],
    ['409 sold_out', c('buy_sold_out')],
    ['503 busy', `${c('buy_busy')} (allowed up to ${(BUSY_RATE * 100).toFixed(1)}%)`],
    ['other answers', `${c('buy_unexpected')} (want 0)`],
    ['dropped', c('dropped_iterations')],
  ]);
}
