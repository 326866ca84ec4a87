package queue

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// EnqueueLua is the Lua source of the enqueue logic, for scripts of other
// packages that must enqueue atomically with their own writes (the buy path
// decrements stock and enqueues the order in one script). Prepend it to your
// script; it defines
//
//	local function queue_enqueue(ready, data, meta, wake, id, type, payload, due_ms, max_attempts, now_ms)
//
// which returns 1 when the task was added and 0 when a task with that id
// already exists (nothing changed), and publishes a wake-up when the task
// became the queue's earliest. A script enqueueing several tasks can call
//
//	local function queue_enqueue_nowake(ready, data, meta, id, type, payload, due_ms, max_attempts, now_ms)
//
// instead (0 duplicate, 1 added, 2 added and now the earliest) and PUBLISH
// once on the wake key when any call returned 2. Pass the four keys of (*Queue).EnqueueKeys
// in your KEYS and the values of (*Queue).EnqueueArgs in your ARGV. It raises
// a script error before writing anything when an argument is malformed, so
// call it before your own writes (or validate with EnqueueArgs first). The
// queue's own Enqueue runs this same source.
//
//go:embed lua/enqueue_lib.lua
var EnqueueLua string

var (
	//go:embed lua/common.lua
	commonLua string
	//go:embed lua/enqueue.lua
	enqueueBody string
	//go:embed lua/claim.lua
	claimBody string
	//go:embed lua/ack.lua
	ackBody string
	//go:embed lua/nack.lua
	nackBody string
	//go:embed lua/release.lua
	releaseBody string
	//go:embed lua/extend.lua
	extendBody string
	//go:embed lua/cancel.lua
	cancelBody string
	//go:embed lua/inspect.lua
	inspectBody string
	//go:embed lua/list.lua
	listBody string
	//go:embed lua/requeue.lua
	requeueBody string
	//go:embed lua/delete.lua
	deleteBody string
	//go:embed lua/stats.lua
	statsBody string
	//go:embed lua/snapshot.lua
	snapshotBody string
)

// The scripts, loaded once; each is a library followed by one operation.
var (
	enqueueScript  = redis.NewScript(EnqueueLua + "\n" + enqueueBody)
	claimScript    = withCommon(claimBody)
	ackScript      = withCommon(EnqueueLua + "\n" + ackBody)
	nackScript     = withCommon(nackBody)
	releaseScript  = withCommon(releaseBody)
	extendScript   = withCommon(extendBody)
	cancelScript   = withCommon(cancelBody)
	inspectScript  = withCommon(inspectBody)
	listScript     = withCommon(listBody)
	requeueScript  = withCommon(requeueBody)
	deleteScript   = withCommon(deleteBody)
	statsScript    = withCommon(statsBody)
	snapshotScript = withCommon(snapshotBody)
)

// withCommon is the script of an operation that uses common.lua's helpers.
func withCommon(body string) *redis.Script { return redis.NewScript(commonLua + "\n" + body) }
