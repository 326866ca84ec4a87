// Package chaostest is the randomized fault run of the sale, run as a test
// (TestChaos): three real `seckill serve` processes on a private
// redis-server and a database of their own take a mixed workload — buys
// with and without request ids and their retries on other instances,
// cancels, payments, payment expiries, stock top-ups and cuts, reconciles,
// stock reads — while faults are injected at random: Redis flushed, killed
// and restarted without its data, or frozen past the client read timeout; a
// seckill process killed -9 and restarted, or stopped and continued; the
// drain held inside its MySQL transactions.
//
// Everything is drawn from one seed (SECKILL_CHAOS_SEED, printed at the
// start and in every failure), for a duration (SECKILL_CHAOS_DURATION). Every
// request is recorded with its call and return times and its answer. The run
// is cut into phases; between two phases the workload and the faults stop,
// the queues drain and the invariants are checked at rest. At the end the
// history is checked against the contract in README.md: orders in MySQL
// against the 202 answers, request ids, per-user limits, cancel and pay
// outcomes, the audit and `seckill verify`, and the linearizability of each
// SKU's buys, cancels, expiries, stock changes and stock reads against a
// counter of units (github.com/anishathalye/porcupine). docs/FAULTS.md
// describes the run and its model. The package has no non-test code.
package chaostest
