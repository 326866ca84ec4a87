package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/seedfile"
)

// Admin is what the admin endpoints need.
type Admin interface {
	UpsertSKU(ctx context.Context, spec catalog.Spec) (*sale.SeededSKU, bool, error)
	Seed(ctx context.Context, f seedfile.File) ([]sale.Seeded, []sale.DropView, error)
	UpdateSKU(ctx context.Context, id uint64, spec catalog.Spec) (*sale.SeededSKU, error)
	SetStock(ctx context.Context, id uint64, stock int64) (*sale.SKUView, error)
	Audit(ctx context.Context, id uint64) (*sale.Report, error)
	Reconcile(ctx context.Context, id uint64) (*sale.Report, error)
	Queue(ctx context.Context, sku uint64, n int) (*sale.QueueReport, error)
	DeadLetters(ctx context.Context, sku uint64, offset, n int) ([]sale.TaskView, error)
	RequeueDead(ctx context.Context, sku uint64, id string) error
	DeleteDead(ctx context.Context, sku uint64, id string) error
	AdminSKUs(ctx context.Context, after uint64, limit int) ([]sale.AdminSKUView, uint64, error)
	EndSale(ctx context.Context, id uint64) (*sale.SKUView, error)
}

// skuRequest is the body of POST /admin/skus and PATCH /admin/skus/{id}.
// Every field is a pointer so that a field left out (nil) is told from a
// zero: a price left out is not a free sale.
type skuRequest struct {
	ID         *uint64 `json:"id"`
	Name       *string `json:"name"`
	PriceCents *int64  `json:"price_cents"`
	Stock      *int64  `json:"stock"`
	// StockTotal is the deprecated name of Stock, taken for one release.
	StockTotal   *int64     `json:"stock_total"`
	PerUserLimit *int       `json:"per_user_limit"`
	Buckets      *int       `json:"buckets"`
	StartsAt     *time.Time `json:"starts_at"`
	EndsAt       *time.Time `json:"ends_at"`
	Hidden       *bool      `json:"hidden"`
	// LimitCountsCancelled: whether the per-user limit counts the units of
	// the shopper's cancelled and expired orders.
	LimitCountsCancelled *bool `json:"limit_counts_cancelled"`
	// WaitingRoom gives a new SKU a waiting room.
	WaitingRoom *catalog.RoomSpec `json:"waiting_room"`
}

// spec is the catalog.Spec r gives.
func (r *skuRequest) spec() (catalog.Spec, error) {
	stock, err := oneStock(r.Stock, r.StockTotal)
	if err != nil {
		return catalog.Spec{}, err
	}
	spec := catalog.Spec{Name: r.Name, PriceCents: r.PriceCents, Stock: stock, PerUserLimit: r.PerUserLimit,
		StartsAt: r.StartsAt, EndsAt: r.EndsAt, Hidden: r.Hidden, LimitCountsCancelled: r.LimitCountsCancelled,
		WaitingRoom: r.WaitingRoom}
	if r.ID != nil {
		spec.ID = *r.ID
	}
	if r.Buckets != nil {
		spec.Buckets = *r.Buckets
	}
	return spec, nil
}

// oneStock is the stock a request gives under either of its names: stock,
// or stock_total, its deprecated name. Both with different values is 400.
func oneStock(stock, old *int64) (*int64, error) {
	if stock != nil && old != nil && *stock != *old {
		return nil, invalid(fmt.Sprintf("stock %d and stock_total %d differ: send stock alone (stock_total is its deprecated name)", *stock, *old))
	}
	if stock == nil {
		return old, nil
	}
	return stock, nil
}

// decodeFields decodes the body into v, one of the admin requests whose
// fields are pointers, as decodeJSON does, and refuses a null: none of
// their fields can be null, and in a merge patch null would ask to remove
// the field. Leaving a field out is how to keep it.
func decodeFields(c *gin.Context, v any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if err := decodeStrict(body, v); err != nil {
		return err
	}
	if key, ok := nullKey(body); ok {
		return invalid(fmt.Sprintf("field %s must not be null: leave it out to keep its value", key))
	}
	return nil
}

// nullKey returns the first key of the JSON object body whose value is
// null.
func nullKey(body []byte) (string, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return "", false
	}
	for key, v := range fields {
		if string(bytes.TrimSpace(v)) == "null" {
			return key, true
		}
	}
	return "", false
}

func handleUpsertSKU(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req skuRequest
		if err := decodeFields(c, &req); err != nil {
			writeError(c, log, err)
			return
		}
		spec, err := req.spec()
		if err != nil {
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

// patchTypes are the media types a SKU's patch may be sent as: a JSON merge
// patch (RFC 7396), which is a JSON object.
const patchTypes = "application/merge-patch+json, application/json"

// handlePatchSKU applies a JSON merge patch to a SKU: the fields it names
// change, the others are kept.
func handlePatchSKU(admin Admin, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		if ct := c.GetHeader("Content-Type"); ct != "" {
			mt, _, err := mime.ParseMediaType(ct)
			if err != nil || mt != "application/merge-patch+json" && mt != "application/json" {
				c.Header("Accept-Patch", patchTypes)
				writeError(c, log, errPatchType)
				return
			}
		}
		var req skuRequest
		if err := decodeFields(c, &req); err != nil {
			writeError(c, log, err)
			return
		}
		if req.ID != nil && *req.ID != id {
			writeError(c, log, invalid(fmt.Sprintf("id %d in the body is not the path's %d: a sku's id cannot change", *req.ID, id)))
			return
		}
		spec, err := req.spec()
		if err != nil {
			writeError(c, log, err)
			return
		}
		spec.ID = 0 // the path's, checked above
		v, err := admin.UpdateSKU(c.Request.Context(), id, spec)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, v)
	}
}

var errPatchType = &Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
	Detail: "send a sku's patch as a JSON merge patch: Content-Type: application/merge-patch+json (or application/json)"}

// stockRequest is the body of PUT /admin/skus/{id}/stock. A null is taken
// as the field left out: the stock is still required.
type stockRequest struct {
	Stock *int64 `json:"stock"`
	// StockTotal is the deprecated name of Stock, taken for one release.
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
		stock, err := oneStock(req.Stock, req.StockTotal)
		if err != nil {
			writeError(c, log, err)
			return
		}
		if stock == nil {
			writeError(c, log, invalid("stock is required"))
			return
		}
		v, err := admin.SetStock(c.Request.Context(), id, *stock)
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
