// Package chaostest is the randomized fault run of the sale, run as a test
// (TestChaos). Three deployments ("lanes") run side by side, each with
// three real `seckill serve` processes, a Redis and a database of its own:
// a standalone redis-server without persistence; a private Redis Cluster
// (three masters with a replica each) with SKUs split into 1, 3 and 6 stock
// buckets; a Sentinel set with two replicas and redis.wait_replicas 1. The
// Cluster and Sentinel lanes identify shoppers by HS256 tokens, the
// standalone lane by X-User-ID. Each lane takes a mixed workload — buys
// with and without request ids and their retries on other instances (with
// the request id a 503 names), cancels, payments, payment expiries, stock
// top-ups and cuts, reconciles, requests with refused tokens, and deletes
// and requeues of dead letters racing reconciles — while faults are
// injected at random: a seckill process killed -9 and restarted, or
// stopped and continued; the drain held inside its MySQL transactions; a
// process holding batches killed or stopped past its lease (dead letters);
// standalone Redis flushed, killed and restarted without its data, or
// frozen past the client read timeout; a Cluster master killed (its replica
// takes over, it rejoins as a replica) or frozen; the Sentinels' primary
// killed, frozen or failed over with SENTINEL FAILOVER.
//
// Everything is drawn from one seed (SECKILL_CHAOS_SEED, printed at the
// start and in every failure), for a duration (SECKILL_CHAOS_DURATION). Every
// request is recorded with its call and return times and its answer. Each
// lane's run is cut into phases; between two phases the workload and the
// faults stop, the dead letters are cleared, the queues drain and the
// invariants are checked at rest. At the end each lane's history is checked
// against the contract of docs/design/guarantees.md: orders in MySQL against the 202
// answers (a lost 202 is excused only by a data loss of the standalone
// Redis or an operator's delete of its dead letter), request ids, per-user
// limits, cancel and pay outcomes, refused tokens, the audit and `seckill
// verify`, and the linearizability of each SKU's buys, cancels, expiries,
// stock changes, stock reads, reconciles and dead-letter deletes against
// one counter of units (github.com/anishathalye/porcupine); a history it
// finds illegal or cannot decide fails the run. docs/design/faults.md describes
// the run and its model. The package has no non-test code.
package chaostest
