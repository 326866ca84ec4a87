// Package queue is a reliable delay and task queue on Redis sorted sets: the
// buy path enqueues accepted orders, background workers drain them into
// MySQL, and delayed tasks cancel unpaid orders.
//
// # Guarantee
//
// Delivery is at least once. An enqueued task is never dropped: it is
// pending, held by exactly one consumer under a lease, or a dead letter kept
// until an operator lists, requeues or deletes it (unless Options.DeadCap is
// set, and then every trimmed id is logged and counted). No two consumers
// hold a task at the same time: a claim stamps the task with a fresh token
// and Ack, Nack, Release and Extend succeed only with the current token. A
// task can still run twice in sequence (its holder crashed or overran its
// lease), so effectively-once results need idempotent handlers, as the order
// worker is (an order id inserts once).
//
// # Key layout
//
// Every name of one queue shares the queue's hash tag, so each script touches
// a single Redis Cluster slot. With prefix P (default "seckill:") and queue
// name N, T = rkey.Tag(N) ("{orders}" for "orders"; "{sku:42}" stays
// "{sku:42}", so a SKU's queue sits in the slot of its stock keys):
//
//	P T :q:ready     ZSET id -> due time, Unix ms (pending: due or delayed)
//	P T :q:inflight  ZSET id -> lease deadline, Unix ms
//	P T :q:data      HASH id -> payload
//	P T :q:meta      HASH id -> "attempts|token|max_attempts|enqueued_ms|type"
//	P T :q:dead      ZSET id -> time of death, Unix ms
//	P T :q:err       HASH id -> last error
//	P T :q:wake      pub/sub channel (not stored)
//
// Scripts receive all of them in KEYS and build no names, so the queue works
// on Cluster and behind proxies. Scores are milliseconds from the caller's
// clock (Options.Now), passed in ARGV.
//
// # Bounded work and recovery
//
// Claim moves at most MaxClaim tasks per call, batch enqueue sends scripts of
// at most 256 tasks, and every Claim first returns at most
// Options.RecoverBatch expired leases to the queue, so no script grows with
// the backlog. A consumer claims again at the latest every
// ConsumerOptions.MaxIdle, so a task whose holder died is back in work at
// most Lease + MaxIdle after its claim (plus one claim per RecoverBatch
// expired tasks ahead of it). A recovered task keeps its attempt count; one
// that used its last attempt becomes a dead letter.
//
// # Composing with other scripts
//
// EnqueueLua, EnqueueKeys and EnqueueArgs let another package enqueue inside
// its own script, so a stock decrement and the order task commit together;
// see the example. A Consumer's handler whose work ends in new tasks of its
// own queue leaves them with EnqueueOnAck, and the script that acks the
// batch enqueues them: one round trip, not two.
package queue
