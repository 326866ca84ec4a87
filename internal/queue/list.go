package queue

import "context"

// List returns up to n tasks in state, from position offset: pending tasks
// by due time, in-flight ones by lease deadline, dead letters by time of
// death. Page with offset to walk a long queue; n is capped at MaxList, and a
// page shorter than asked for is the last one.
func (q *Queue) List(ctx context.Context, state State, offset, n int) ([]Info, error) {
	which := map[State]string{StatePending: "ready", StateInFlight: "inflight", StateDead: "dead"}[state]
	if which == "" {
		return nil, nil
	}
	return q.list(ctx, which, state, offset, n)
}
