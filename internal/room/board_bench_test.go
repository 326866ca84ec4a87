package room

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/catalog"
)

// BenchmarkBoardJoin is a crowd of new shoppers joining one room at once
// through a board, on the test Redis: each join issues a ticket in Redis
// (combined with the joins waiting beside it) and is remembered.
func BenchmarkBoardJoin(b *testing.B) {
	f := newFixture(b, 1_000_000, 1, catalog.Room{Mode: catalog.RoomFIFO, AdmitPerSecond: 1})
	board := NewBoard(f.room, BoardOptions{})
	defer board.Close()
	f.clock.Advance(time.Minute)
	var n atomic.Int64
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := board.Join(b.Context(), f.sku.ID, fmt.Sprintf("u%d", n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
