package testsvc

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Commands is a go-redis hook that records the arguments of every command
// sent through the client it is added to, pipelined ones included.
type Commands struct {
	mu   sync.Mutex
	cmds [][]any
}

// DialHook is the go-redis hook for dialling; it records nothing.
func (h *Commands) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records the command.
func (h *Commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook records each command of the pipeline.
func (h *Commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.record(cmds...)
		return next(ctx, cmds)
	}
}

func (h *Commands) record(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		h.cmds = append(h.cmds, c.Args())
	}
}

// Take returns the arguments of the commands recorded since the last Take.
func (h *Commands) Take() [][]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.cmds
	h.cmds = nil
	return c
}
