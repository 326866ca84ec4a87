// Package lock provides the Redis locks of the flash sale: a token-checked
// mutex with optional fencing tokens, a reentrant lock, a read-write lock —
// each on a single Redis deployment (standalone, Sentinel or Cluster) through
// a [Client] — and [Redlock] over several independent masters.
//
// # Using it
//
//	locks := lock.New(rdb, lock.Options{Metrics: metrics}) // one per process
//	defer locks.Close()
//	m, err := locks.Lock(ctx, "{sku:42}", 5*time.Second, lock.WithWaitTimeout(time.Second))
//	if err != nil { ... }                                   // errors.Is(err, lock.ErrNotObtained)
//	defer m.Unlock(ctx)
//
// [Client.TryLock] makes one attempt; [Client.Lock] waits, retrying on a
// capped, jittered exponential backoff and at once when the holder's release
// is published (one shared pub/sub connection per Client; one local waiter is
// woken per release). [WithWatchdog] renews a held lock every ttl/3;
// [Mutex.Done] and [Mutex.Context] report the moment a lock is known lost.
// An [Owner] is an explicit holder identity: it owns reentrant holds and can
// release everything it holds at once.
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
//     expiry) returns a sentinel error and changes nothing in Redis.
//
// Across processes the order comes from Redis: the winning SET runs after
// the releasing script. Within one process the race detector sees the same
// order (a plain counter incremented under the lock by 100 goroutines passes
// -race): both calls take and return connections of the shared go-redis
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
// check [Mutex.Key] and [Mutex.Token] inside the same Redis script that
// changes the data (same hash tag, same slot). A single Redis with
// asynchronous replicas can lose a lock on failover. [Redlock] survives the
// loss of a minority of nodes, but assumes bounded clock drift between
// nodes and this process, node clocks that do not jump, and nodes that
// restart without their data only after a TTL has passed; it has no fencing
// token, and it waits by backoff only.
//
// # Where the seed articles' ideas live
//
//	seed idea                                        where / what replaces it
//	000 lock(name, timeout, expire, waitIntervalUs)  Client.Lock + WithWaitTimeout + Backoff; TryLock for timeout 0
//	000 SETNX then EXPIRE (unsafe: crash between)    one SET NX PX (TryLock); lock_fenced.lua when fencing
//	000 TTL < 0 repair, take the lock over (unsafe)  not needed: a lock never lacks a TTL; taking over would steal a live lock
//	000 unlock = check then DEL (unsafe: not atomic, no token)  Mutex.Unlock: unlock.lua compare-and-delete
//	000 unlockAll over lockedNames                   Owner.UnlockAll (the Owner tracks its handles)
//	000 expire(name, seconds)                        Mutex.Extend (token-checked, extend.lua)
//	000 isLocking(name)                              Mutex.Held / Mutex.TTL (checked in Redis, pttl.lua)
//	000 ZSET task queue                              package internal/queue, not here
//	001 expiry timestamp in the value + GETSET (unsafe: client clocks, races)  server-side PX expiry only
//	001 Lua SETNX+EXPIRE                             SET NX PX; lock_fenced.lua (SET NX PX + INCR)
//	001 unique token + compare-and-delete Lua        Mutex.Token, unlock.lua
//	001 tryLock(seconds) / (seconds, interval, maxTries)  TryLock / Lock + WithBackoff + WithMaxRetries
//	002 SET ... NX EX options                        SET NX PX (millisecond TTLs)
//	002 reentrant hash, HINCRBY owner, re-arm TTL    Owner.TryLockReentrant / LockReentrant, reentrant_lock.lua
//	002 unlock returns nil / 0 / 1                   Reentrant.Unlock: ErrNotHeld / n > 0 still held / 0 released
//	002 watchdog: timer + owner-checked EXPIRE       WithWatchdog (every ttl/3), extend scripts
//	003 EXISTS then SET (unsafe: not atomic)         SET NX
//	003 work longer than the TTL                     WithWatchdog; Done/Context lost signal; WithFencing
//	003 per-thread (ThreadLocal) reentrancy (no Go equivalent; goroutine IDs are unsafe)  explicit Owner ID
//	003 renewal limited to N times                   WithWatchdog(n)
//	003 tests: basic, 10 threads contending, reentrancy  lock_test files: 100 goroutines, depth 3, ...
//	003 Redisson: hash + Lua, watchdog, pub/sub on unlock  reentrant lock; watchdog; fanout.Hub (one connection, wake one)
//	003 RedLock: N masters, quorum N/2+1, validity = TTL − elapsed − drift, release on all  Redlock
//	004 single-instance RW on two keys (unsafe on Cluster: two slots; readers delete each other)  one hash key, per-holder fields
//	004 cluster RW: read/write fields with client ms timestamps (unsafe: same-ms collisions, client clocks)  r:/w:<token> fields, random tokens, server TIME
//	004 owner-only delete, auto-expiry               rw_unlock.lua checks the holder's field; per-field expiry + key PEXPIREAT
//	004 no reentrant writes                          same: a second TryLock by anyone fails
//	(not in the seeds) writer starvation             waiting-writer marker p:<token> blocks new readers
//
// Key names are built in keys.go; each script's KEYS, ARGV and results are
// documented at the top of its file under lua/.
package lock
