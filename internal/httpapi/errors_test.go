package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/stock"
)

func TestErrorTable(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("x: %w", stock.ErrSoldOut), http.StatusConflict, "sold_out"},
		{fmt.Errorf("x: %w", stock.ErrBusy), http.StatusServiceUnavailable, "busy"},
		{fmt.Errorf("x: %w", catalog.ErrNotFound), http.StatusNotFound, "unknown_sku"},
		{fmt.Errorf("x: %w", order.ErrQueued), http.StatusConflict, "order_queued"},
		{fmt.Errorf("redis: %w", context.Canceled), http.StatusServiceUnavailable, "canceled"},
		{fmt.Errorf("redis: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "unavailable"},
		{errors.New("boom at 10.0.0.1:3306"), http.StatusInternalServerError, "internal"},
	} {
		got := toAPI(tc.err)
		assert.Equal(t, tc.status, got.Status, "%v", tc.err)
		assert.Equal(t, tc.code, got.Code, "%v", tc.err)
		if got.Status == http.StatusInternalServerError {
			assert.NotContains(t, got.Detail, "10.0.0.1", "internals stay in the log")
		}
	}
}
