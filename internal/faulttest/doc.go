// Package faulttest holds the fault scenarios of the sale, run as tests: each
// one starts real seckill processes (built once per run from ./cmd/seckill)
// on its own Redis key prefix and its own database, drives a sale with
// concurrent shoppers, injects a fault — an instance killed or stopped,
// MySQL stopped, Redis restarted without its data, a lock holder or a
// worker stalled past its lease — and then checks what the sale promises:
// every order answered with 202 is in MySQL exactly once (or was refused by
// the stock guard and its units returned), sold never exceeds stock_total,
// no order id is written twice, and `seckill verify` exits 0. Two scenarios
// are hostile clients instead: a flood of requests whose methods and paths
// are the client's own must leave the server's memory and /metrics as they
// were (TestMethodFlood), and readers of a large published draw who stop
// reading must not grow it by more than a bound (TestSlowReadersOfALargeDraw).
//
// Each scenario logs one line of figures, "FAULT scenario=... accepted=...",
// that docs/design/faults.md and BENCHMARKS.md report. Stores the scenarios kill or
// stop are private to the test (a redis-server or a mariadbd of its own);
// the shared test services are only used through a unique prefix or
// database. The package has no non-test code.
package faulttest
