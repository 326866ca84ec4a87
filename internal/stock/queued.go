package stock

import "context"

// QueuedOrders returns the order tasks in sku's queue (pending, in flight or
// dead), read in one step, and how many of them are dead letters. A task
// that does not decode is left out (the drain dead-letters it).
func (s *Store) QueuedOrders(ctx context.Context, sku uint64) ([]OrderTask, int64, error) {
	snap, err := s.Lookup(sku).Snapshot(ctx, TaskCreate)
	if err != nil {
		return nil, 0, err
	}
	out := make([]OrderTask, 0, len(snap))
	var dead int64
	for _, in := range snap {
		t, err := DecodeTask(in.Payload)
		if err != nil {
			continue
		}
		out = append(out, t)
		if in.Dead {
			dead++
		}
	}
	return out, dead, nil
}
