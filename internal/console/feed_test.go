package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/sale"
)

// fakeSales answers every SKU from 1 to 9 with fixed figures.
type fakeSales struct{}

func (fakeSales) AdminSKUs(_ context.Context, after uint64, limit int) ([]sale.AdminSKUView, uint64, error) {
	if after+1 > 9 || limit < 1 {
		return nil, 0, nil
	}
	v := sale.AdminSKUView{}
	v.ID, v.Name = after+1, "x"
	return []sale.AdminSKUView{v}, 0, nil
}

func (fakeSales) Queue(_ context.Context, sku uint64, _ int) (*sale.QueueReport, error) {
	return &sale.QueueReport{SKU: sku}, nil
}

func (fakeSales) Audit(_ context.Context, id uint64) (*sale.Report, error) {
	return &sale.Report{SKU: id}, nil
}

func (fakeSales) Drop(_ context.Context, id uint64) (*sale.DropView, error) {
	return nil, fmt.Errorf("%w: %d", catalog.ErrDropNotFound, id)
}

// A reload keeps the chart's history (docs/admin/console.md): the console
// leaves and comes back a moment later, while another console watching
// another sale keeps the sampler running.
func TestAReloadKeepsTheHistoryWhileAnotherSaleIsWatched(t *testing.T) {
	f := newFeed(fakeSales{}, feedOptions{Interval: 20 * time.Millisecond, AuditEvery: time.Hour, Linger: time.Minute,
		MaxSubscribers: 8, MaxListed: 10, History: 100, Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(f.close)
	other, err := f.subscribe(2)
	require.NoError(t, err)
	defer f.unsubscribe(other)
	one, err := f.subscribe(1)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.history[1]) >= 2
	}, 5*time.Second, 10*time.Millisecond)
	f.unsubscribe(one)                 // the page reloads...
	time.Sleep(100 * time.Millisecond) // ...and takes a few samples' time
	again, err := f.subscribe(1)
	require.NoError(t, err)
	defer f.unsubscribe(again)
	select {
	case fr := <-again.frames:
		assert.Equal(t, "history", fr.event, "the first frame after a reload")
	case <-time.After(time.Second):
		t.Fatal("no frame")
	}
}
