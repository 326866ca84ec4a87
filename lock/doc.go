// Package lock provides Redis locks: a token mutex with optional fencing
// tokens, a reentrant lock, a read-write lock — each on one Redis deployment
// (standalone, Sentinel or Cluster) through a [Client] — and [Redlock] over
// several independent masters. Waiters are woken by the holder's release
// over pub/sub, not by polling.
//
// # Which lock to use when
//
//   - One holder at a time, short work: [Client.TryLock] (fail fast) or
//     [Client.Lock] with [WithWait] (wait, bounded).
//   - Work that may outlast the TTL: add [WithWatchdog] and stop when
//     [Lease.Done] is closed.
//   - Overlap must never corrupt data: [WithFencing], and have the store
//     refuse a [Lease.Fence] lower than the highest it has seen.
//   - The same caller re-enters (nested calls, one session): [Client.Owner].
//   - Many readers, an occasional writer: [Client.RWMutex].
//   - No single Redis may be trusted to keep the lock: [NewRedlock].
//
// # Using it
//
//	locks := lock.New(rdb, lock.WithPrefix("myapp:lock:")) // one per process
//	defer locks.Close()
//	l, err := locks.Lock(ctx, "{sku:42}", 5*time.Second, lock.WithWait(time.Second))
//	if err != nil { ... }                               // errors.Is(err, lock.ErrNotObtained)
//	defer l.Unlock(ctx)
//
// Every acquisition returns a [Lease]. [Client.Lock] retries on a capped,
// jittered exponential backoff and at once when the holder's release is
// published (one shared pub/sub connection per Client; one local waiter is
// woken per release). Metrics are optional: [WithObserver] and package
// lockmetrics.
//
// # Guarantees
//
//   - Acquire is one command (SET key token NX PX ttl) or one script, so a
//     lock never exists without its TTL, and a holder that dies frees it
//     when the TTL runs out.
//   - Every acquisition has a fresh 128-bit random token; release, extend
//     and renewal are scripts that act only if the key still carries that
//     token (or, for the reentrant lock, the owner's ID), so a holder whose
//     lock expired can never release or extend the next holder's lock.
//   - Scripts touch only the keys passed to them, and all keys of one name
//     share one hash tag, so everything works unchanged on Redis Cluster.
//   - Bad input (empty name, TTL under 1ms, releasing twice, extending after
//     expiry) returns an error starting with "lock:" that errors.Is can
//     test, and changes nothing in Redis.
//
// Across processes the order comes from Redis: the winning SET runs after
// the releasing script. Within one process the race detector sees the same
// order: both calls take and return connections of the shared go-redis
// pool, whose mutex is released by the Unlock before its command is sent and
// acquired by the next Lock after its reply arrives.
//
// # Non-guarantees
//
// A Redis lock is an efficiency lock: it stops duplicate work in the normal
// case, not every overlap. A holder can be paused (GC, swap, a slow network)
// past its TTL and act after someone else took the lock; the watchdog and
// the lost signal narrow that window but cannot close it. Where overlap must
// never corrupt data, fence the resource: take the lock [WithFencing] and
// have the resource refuse any fence lower than the highest it has seen, or
// check [Lease.Key] and [Lease.Token] inside the same Redis script that
// changes the data (same hash tag, same slot). A single Redis with
// asynchronous replicas can lose a lock on failover. [Redlock] survives the
// loss of a minority of nodes, but assumes bounded clock drift between
// nodes and this process, node clocks that do not jump, and nodes that
// restart without their data only after a TTL has passed; it has no fencing
// token, and it waits by backoff only.
//
// Key names are built in keys.go; each script's KEYS, ARGV and results are
// documented at the top of its file under lua/.
package lock
