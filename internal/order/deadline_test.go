package order

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/orderid"
	"github.com/seckill/seckill/internal/queue"
)

func deadlineOrders(base time.Time, offsets map[string]time.Duration, ids ...string) []Order {
	out := make([]Order, len(ids))
	for i, id := range ids {
		out[i] = Order{OrderID: id, ExpiresAt: base.Add(offsets[id])}
	}
	return out
}

// Deadlines groups orders per second of expiry, due at the latest deadline
// of each, and names each task after its second and its set of orders: the
// same orders (in any order) give the same id again, so a redelivery
// enqueues nothing new; any other grouping of the same second, a task of its
// own, so an order left out of the first grouping still gets its deadline.
func TestDeadlineIDsFollowTheirOrders(t *testing.T) {
	base := time.Unix(1_800_000_000, 100*int64(time.Millisecond)).UTC()
	off := map[string]time.Duration{"a": 0, "b": 300 * time.Millisecond, "c": 800 * time.Millisecond, "d": 1500 * time.Millisecond}
	ab := Deadlines(deadlineOrders(base, off, "a", "b"))
	abc := Deadlines(deadlineOrders(base, off, "a", "b", "c"))
	cba := Deadlines(deadlineOrders(base, off, "c", "b", "a"))
	abcd := Deadlines(deadlineOrders(base, off, "a", "b", "d", "c"))

	require.Len(t, ab, 1)
	require.Len(t, abc, 1)
	require.Len(t, cba, 1)
	require.Len(t, abcd, 2)
	assert.Equal(t, TaskExpire, abc[0].Type)
	assert.Equal(t, "a,b,c", string(abc[0].Payload))
	assert.Equal(t, base.Add(800*time.Millisecond), abc[0].Due, "due at the group's latest deadline")
	assert.NotEqual(t, ab[0].ID, abc[0].ID, "another grouping of the second is another task")
	assert.Equal(t, abc[0].ID, cba[0].ID, "the same orders are the same task")
	assert.Equal(t, abc[0], queue.Task{ID: abcd[0].ID, Type: abcd[0].Type, Payload: []byte("a,b,c"), Due: abcd[0].Due})
	assert.Equal(t, "d", string(abcd[1].Payload))
	assert.Equal(t, base.Add(1500*time.Millisecond), abcd[1].Due)

	id := regexp.MustCompile(`^exp:(\d+):[0-9a-f]{16}:([^:]+)$`)
	for _, tk := range append(abc, abcd...) {
		m := id.FindStringSubmatch(tk.ID)
		require.NotNil(t, m, tk.ID)
		assert.Equal(t, fmt.Sprint(tk.Due.Unix()), m[1], "the id names the second it is due in")
		assert.Equal(t, strings.Split(string(tk.Payload), ",")[0], m[2], "and the least of its orders")
	}

	// Bounded, however many (and however long) the orders.
	b := orderid.NewBatch(catalog.MaxID, orderid.MaxBucket, base, 1000)
	many := make([]Order, 1000)
	for i := range many {
		many[i] = Order{OrderID: b.Order(i), ExpiresAt: base}
	}
	big := Deadlines(many)
	require.Len(t, big, 1)
	assert.LessOrEqual(t, len(big[0].ID), len("exp:")+11+1+16+1+orderid.MaxLen, big[0].ID)
	assert.NotEqual(t, big[0].ID, Deadlines(many[1:])[0].ID)

	// What follows the last colon is an order id of the task, naming the
	// bucket whose queue holds it (the admin's dead-letter calls read it).
	id0 := big[0].ID[strings.LastIndexByte(big[0].ID, ':')+1:]
	sku, bucket, _, ok := orderid.Parse(id0)
	require.True(t, ok, big[0].ID)
	assert.Equal(t, uint64(catalog.MaxID), sku)
	assert.Equal(t, orderid.MaxBucket, bucket)

	assert.Empty(t, Deadlines(nil))
}
