// Package replica makes a Redis write safe from a failover before anything
// is promised on it: a Waiter runs a script and then WAIT on the same
// connection of the same primary, and reports whether enough replicas
// acknowledged the write. Replication is asynchronous, so a primary that
// dies may take with it writes it had already answered; a write that enough
// replicas acknowledged is on the replica Sentinel or the Cluster promotes.
//
// WAIT counts the writes of the connection it runs on, so the script and
// the WAIT go out in one pipeline on one connection: the node's own client
// in a Cluster (the master of the script's first key), the client itself
// otherwise (standalone, or the master a Sentinel client follows).
package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated means a write ran on the Redis primary but was not
// acknowledged by the replicas it must reach in time: it may be lost if the
// primary fails now, so nothing that depends on it is promised yet.
var ErrNotReplicated = errors.New("redis: write not acknowledged by enough replicas in time")

// Waiter runs writes that must reach N replicas. The zero N runs them
// plainly, with no WAIT.
type Waiter struct {
	rdb     redis.UniversalClient
	n       int
	timeout time.Duration
}

// New returns a Waiter on rdb that waits up to timeout for n replicas.
func New(rdb redis.UniversalClient, n int, timeout time.Duration) *Waiter {
	return &Waiter{rdb: rdb, n: n, timeout: timeout}
}

// Replicas is how many replicas a write must reach; 0 (or a nil Waiter)
// means none.
func (w *Waiter) Replicas() int {
	if w == nil {
		return 0
	}
	return w.n
}

// Run runs script with keys and args and, when the Waiter waits for
// replicas, WAIT right after it on the same connection. It returns the
// script's reply, and ErrNotReplicated (wrapped) with that reply
// when fewer replicas acknowledged it in time: the script ran on the
// primary, but a failover may still undo it.
func (w *Waiter) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	if w.Replicas() <= 0 {
		cmd := script.Run(ctx, w.rdb, keys, args...)
		return cmd, cmd.Err()
	}
	node, err := w.node(ctx, keys)
	if err != nil {
		return nil, err
	}
	cmd, acked, err := w.evalAndWait(ctx, node, script.EvalSha, keys, args)
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmd, acked, err = w.evalAndWait(ctx, node, script.Eval, keys, args)
	}
	if err != nil {
		w.failed(ctx)
		return cmd, err
	}
	if acked < int64(w.n) {
		return cmd, fmt.Errorf("%w: %d of %d replicas in %s", ErrNotReplicated, acked, w.n, w.timeout)
	}
	return cmd, nil
}

// Confirm waits until enough replicas hold every write the primary of key
// has made so far — for an answer that repeats an earlier write (a replayed
// request) rather than making one. WAIT only counts a connection's own
// writes, so it refreshes key's expiry first (ttl), a write of its own.
func (w *Waiter) Confirm(ctx context.Context, key string, ttl time.Duration) error {
	if w.Replicas() <= 0 {
		return nil
	}
	node, err := w.node(ctx, []string{key})
	if err != nil {
		return err
	}
	var wait *redis.Cmd
	_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.PExpire(ctx, key, ttl)
		wait = w.wait(ctx, p)
		return nil
	})
	if err != nil {
		w.failed(ctx)
		return err
	}
	acked, err := wait.Int64()
	if err != nil {
		return err
	}
	if acked < int64(w.n) {
		return fmt.Errorf("%w: %d of %d replicas in %s", ErrNotReplicated, acked, w.n, w.timeout)
	}
	return nil
}

// failed makes a Cluster client read the slots again after a write sent
// straight to a node failed: the node may have died or lost its slots in a
// failover, which the client would otherwise learn only on its own
// commands' errors.
func (w *Waiter) failed(ctx context.Context) {
	if c, ok := w.rdb.(*redis.ClusterClient); ok {
		c.ReloadState(ctx)
	}
}

// node is the client whose connections reach the primary that owns keys.
func (w *Waiter) node(ctx context.Context, keys []string) (redis.Cmdable, error) {
	c, ok := w.rdb.(*redis.ClusterClient)
	if !ok {
		return w.rdb, nil
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("replica: a write to wait for needs a key")
	}
	node, err := c.MasterForKey(ctx, keys[0])
	if err != nil {
		return nil, fmt.Errorf("replica: master of %s: %w", keys[0], err)
	}
	return node, nil
}

type evalFunc func(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd

// evalAndWait sends the script (by eval) and WAIT in one pipeline.
func (w *Waiter) evalAndWait(ctx context.Context, node redis.Cmdable, eval evalFunc, keys []string, args []any) (*redis.Cmd, int64, error) {
	var cmd, wait *redis.Cmd
	_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = eval(ctx, p, keys, args...)
		wait = w.wait(ctx, p)
		return nil
	})
	if err := cmd.Err(); err != nil {
		return cmd, 0, err
	}
	acked, err := wait.Int64()
	return cmd, acked, err
}

// wait queues WAIT numreplicas timeout-ms on p.
func (w *Waiter) wait(ctx context.Context, p redis.Pipeliner) *redis.Cmd {
	return p.Do(ctx, "wait", w.n, w.timeout.Milliseconds())
}
