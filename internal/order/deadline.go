package order

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/seckill/seckill/internal/queue"
)

// TaskExpire is the queue task type of a payment deadline; its payload is
// the comma-separated ids of the orders it expires if they are still unpaid.
const TaskExpire = "order.expire"

const expirePfx = "exp:"

// Deadlines returns the tasks that expire orders (of one SKU) at their
// expires_at if they are still unpaid: one task per second of expiry, due
// at the latest deadline in it, so an unpaid order expires at most a second
// late and a drained batch — orders placed within moments of each other —
// costs one or two tasks instead of one per order.
//
// A task's id is its second, a hash of its orders' ids and the least of them
// (deadlineID): the same orders give the same task again, which the queue
// keeps once, and any other set of orders a task of its own. An id taken
// from one order alone would make a batch delivered again and grouped
// otherwise — a chunk's orders committed and their deadline lost with the
// worker — a no-op against the first grouping's task, and the orders not in
// that one would never expire. An order in two tasks is expired once (Close
// changes only a pending order).
func Deadlines(orders []Order) []queue.Task {
	var tasks []queue.Task
	var ids [][]string
	index := map[int64]int{}
	for _, o := range orders {
		sec := o.ExpiresAt.Unix()
		i, ok := index[sec]
		if !ok {
			i = len(tasks)
			index[sec] = i
			tasks = append(tasks, queue.Task{Type: TaskExpire, Due: o.ExpiresAt})
			ids = append(ids, nil)
		} else {
			tasks[i].Payload = append(tasks[i].Payload, ',')
		}
		t := &tasks[i]
		t.Payload = append(t.Payload, o.OrderID...)
		ids[i] = append(ids[i], o.OrderID)
		if o.ExpiresAt.After(t.Due) {
			t.Due = o.ExpiresAt
		}
	}
	for i := range tasks {
		tasks[i].ID = deadlineID(tasks[i].Due.Unix(), ids[i])
	}
	return tasks
}

// deadlineID is the id of the payment deadline of orderIDs (in any order)
// that expire in the second sec: "exp:<sec>:<hash>:<order id>", where hash
// is the first 8 bytes, in hex, of the SHA-256 of the distinct ids, sorted
// and joined by commas, and order id the least of them. Its length does not
// grow with the orders' (an order id is at most orderid.MaxLen bytes). What
// follows the last colon is an order id, which names the SKU's bucket whose
// queue holds the task (as the admin's dead-letter calls read it).
func deadlineID(sec int64, orderIDs []string) string {
	sorted := slices.Clone(orderIDs)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	h := sha256.New()
	for i, id := range sorted {
		if i > 0 {
			h.Write([]byte{','})
		}
		h.Write([]byte(id))
	}
	sum := h.Sum(nil)
	return expirePfx + strconv.FormatInt(sec, 10) + ":" + hex.EncodeToString(sum[:8]) + ":" + sorted[0]
}
