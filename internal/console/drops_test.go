package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/testutil"
)

// dropSales answers fakeSales' SKUs, of which 4 and 5 are the sizes of
// drop 4, and 7 cannot be read.
type dropSales struct{ fakeSales }

func (s dropSales) AdminSKUs(ctx context.Context, after uint64, limit int) ([]sale.AdminSKUView, uint64, error) {
	views, next, err := s.fakeSales.AdminSKUs(ctx, after, limit)
	for i := range views {
		if id := views[i].ID; id == 4 || id == 5 {
			views[i].Drop = 4
		}
	}
	return views, next, err
}

func (s dropSales) Drop(ctx context.Context, id uint64) (*sale.DropView, error) {
	switch id {
	case 4:
		d := &sale.DropView{ID: 4, Name: "Runner <2>", PerUserLimit: 1, State: catalog.Upcoming, StockLeft: 7,
			WaitingRoom: &sale.RoomView{Mode: "random", AdmitPerSecond: 50}}
		for _, sku := range []uint64{4, 5} {
			d.SKUs = append(d.SKUs, sale.SKUView{ID: sku, Name: fmt.Sprintf("Runner 2, size %d", 40+sku), Drop: 4, State: catalog.Upcoming})
		}
		d.SKUs[0].StockLeft, d.SKUs[1].StockLeft = 3, 4
		return d, nil
	case 7:
		return nil, errors.New("redis: connection refused")
	}
	return s.fakeSales.Drop(ctx, id)
}

// A drop's page shows its SKUs, each linked to its sale, the units left of
// each and the room's controls but `open`, which a drop refuses; an id
// that is no drop's is 404, and a drop the stores cannot read 503. A SKU
// of a drop's sale page names and links its drop.
func TestADropsPage(t *testing.T) {
	_, h := newTestOn(t, dropSales{}, Options{Token: token, Now: testutil.NewClock(time.Now()).Now})
	cookie, _ := sessionOf(t, h)

	w := do(h, "GET", "/console/drops/4", nil, withCookie(cookie))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	page := w.Body.String()
	assert.Contains(t, page, `data-page="drop" data-drop="4"`)
	assert.Contains(t, page, `<span id="drop-name">Runner &lt;2&gt;</span>`, "escaped")
	assert.Contains(t, page, `<td><a href="/console/skus/5">Runner 2, size 45</a></td>`)
	assert.Contains(t, page, `<td class="num" data-field="left">4</td>`)
	assert.Contains(t, page, `<dd id="drop-left">7</dd>`)
	assert.Contains(t, page, `id="room-pause"`)
	assert.Contains(t, page, `id="room-close"`)
	assert.NotContains(t, page, `data-room-action="open"`, "a drop's room is never opened")
	assert.Contains(t, page, `id="room-codes-form"`)

	for path, status := range map[string]int{"/console/drops/3": 404, "/console/drops/0": 404, "/console/drops/x": 404, "/console/drops/7": 503} {
		w := do(h, "GET", path, nil, withCookie(cookie))
		assert.Equal(t, status, w.Code, path)
		assert.NotContains(t, w.Body.String(), "connection refused", "%s: no internals", path)
	}
	assert.Contains(t, do(h, "GET", "/console/drops/3", nil, withCookie(cookie)).Body.String(), "There is no drop with this id.")

	w = do(h, "GET", "/console/drops/new", nil, withCookie(cookie))
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `<form id="drop-create"`)
	assert.Contains(t, w.Body.String(), `name="room_opens_at"`)
	assert.Equal(t, http.StatusSeeOther, do(h, "GET", "/console/drops/4", nil, nil).Code, "a page needs the session")

	w = do(h, "GET", "/console/skus/5", nil, withCookie(cookie))
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `<a href="/console/drops/4">drop #4</a>`)
	w = do(h, "GET", "/console/skus/6", nil, withCookie(cookie))
	require.Equal(t, http.StatusOK, w.Code)
	assert.NotContains(t, w.Body.String(), `id="sku-drop"`)
}
