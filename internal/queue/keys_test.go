package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestKeyLayout(t *testing.T) {
	tests := []struct {
		prefix, name, ready, wake string
	}{
		{"seckill:", "orders", "seckill:{orders}:q:ready", "seckill:{orders}:q:wake"},
		{"seckill:", "{sku:42}", "seckill:{sku:42}:q:ready", "seckill:{sku:42}:q:wake"},
		{"app:", "cancel{sku:7}", "app:cancel{sku:7}:q:ready", "app:cancel{sku:7}:q:wake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKeys(tt.prefix, tt.name)
			assert.Equal(t, tt.ready, k.ready)
			assert.Equal(t, tt.wake, k.wake)
			assert.Len(t, k.all(), 7)
			assert.Equal(t, []string{k.ready, k.data, k.meta, k.wake}, k.enqueue())
		})
	}
}

func TestDefaultBackoff(t *testing.T) {
	tests := []struct {
		attempt int
		window  time.Duration
	}{
		{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {5, 16 * time.Second},
		{10, 512 * time.Second}, {11, 10 * time.Minute}, {100, 10 * time.Minute},
	}
	for _, tt := range tests {
		for range 100 {
			d := DefaultBackoff(tt.attempt)
			assert.GreaterOrEqual(t, d, tt.window/2, "attempt %d", tt.attempt)
			assert.LessOrEqual(t, d, tt.window, "attempt %d", tt.attempt)
		}
	}
}

func TestParseMeta(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want meta
	}{
		{"3|tok|10|1800000000000|order|with|pipes", true, meta{attempts: 3, max: 10, enqueued: time.UnixMilli(1_800_000_000_000), typ: "order|with|pipes"}},
		{"0||1|5|x", true, meta{attempts: 0, max: 1, enqueued: time.UnixMilli(5), typ: "x"}},
		{"x|t|1|5|x", false, meta{}},
		{"1|t|1|5", false, meta{}},
	}
	for _, tt := range tests {
		got, ok := parseMeta(tt.in)
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}
