package order

import "github.com/seckill/seckill/internal/queue"

// TaskExpire is the queue task type of a payment deadline; its payload is
// the comma-separated ids of the orders it expires if they are still unpaid.
const TaskExpire = "order.expire"

const expirePfx = "exp:"

// Deadlines returns the tasks that expire orders (of one SKU) at their
// expires_at if they are still unpaid: one task per second of expiry, due
// at the latest deadline in it, so an unpaid order expires at most a second
// late and a drained batch — orders placed within moments of each other —
// costs one or two tasks instead of one per order. A task's id is its first
// order's, so the same orders give the same tasks again.
func Deadlines(orders []Order) []queue.Task {
	var tasks []queue.Task
	index := map[int64]int{}
	for _, o := range orders {
		sec := o.ExpiresAt.Unix()
		i, ok := index[sec]
		if !ok {
			i = len(tasks)
			index[sec] = i
			tasks = append(tasks, queue.Task{ID: expirePfx + o.OrderID, Type: TaskExpire, Due: o.ExpiresAt})
		} else {
			tasks[i].Payload = append(tasks[i].Payload, ',')
		}
		t := &tasks[i]
		t.Payload = append(t.Payload, o.OrderID...)
		if o.ExpiresAt.After(t.Due) {
			t.Due = o.ExpiresAt
		}
	}
	return tasks
}
