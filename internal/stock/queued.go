package stock

import "context"

// QueuedOrders returns the orders in p's queue (pending, in flight or
// dead), read in one step, and how many of them are in dead letters. An
// order that does not decode is left out (the drain dead-letters its task).
func (s *Store) QueuedOrders(ctx context.Context, p Part) ([]OrderTask, int64, error) {
	snap, err := s.Lookup(p).Snapshot(ctx, TaskCreate)
	if err != nil {
		return nil, 0, err
	}
	out := make([]OrderTask, 0, len(snap))
	var dead int64
	for _, in := range snap {
		orders, _ := DecodeOrders(in.Payload)
		out = append(out, orders...)
		if in.Dead {
			dead += int64(len(orders))
		}
	}
	return out, dead, nil
}
