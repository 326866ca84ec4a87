package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/sale"
)

// Admin is what the admin endpoints need.
type Admin interface {
	UpsertSKU(ctx context.Context, spec catalog.Spec) (*sale.SeededSKU, bool, error)
	SetStock(ctx context.Context, id uint64, total int64) (*sale.SKUView, error)
	Audit(ctx context.Context, id uint64) (*sale.Report, error)
	Reconcile(ctx context.Context, id uint64) (*sale.Report, error)
	Queue(ctx context.Context, sku uint64, n int) (*sale.QueueReport, error)
	DeadLetters(ctx context.Context, sku uint64, offset, n int) ([]sale.TaskView, error)
	RequeueDead(ctx context.Context, sku uint64, id string) error
	DeleteDead(ctx context.Context, sku uint64, id string) error
	AdminSKUs(ctx context.Context, after uint64, limit int) ([]sale.AdminSKUView, uint64, error)
	EndSale(ctx context.Context, id uint64) (*sale.SKUView, error)
}

func handleUpsertSKU(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		var spec catalog.Spec
		if err := decodeJSON(c, &spec); err != nil {
			writeError(c, log, err)
			return
		}
		v, created, err := admin.UpsertSKU(c.Request.Context(), spec)
		if err != nil {
			writeError(c, log, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		c.JSON(status, v)
	}
}

type stockRequest struct {
	StockTotal *int64 `json:"stock_total"`
}

func handleSetStock(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		var req stockRequest
		if err := decodeJSON(c, &req); err != nil {
			writeError(c, log, err)
			return
		}
		if req.StockTotal == nil {
			writeError(c, log, invalid("stock_total is required"))
			return
		}
		v, err := admin.SetStock(c.Request.Context(), id, *req.StockTotal)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, v)
	}
}

func handleAudit(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return skuAction(admin.Audit, log)
}

func handleReconcile(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return skuAction(admin.Reconcile, log)
}

// skuAction answers 200 with what f returns for the SKU in the path.
func skuAction[T any](f func(ctx context.Context, id uint64) (T, error), log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		r, err := f(c.Request.Context(), id)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, r)
	}
}
