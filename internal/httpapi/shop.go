package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/sale"
)

// Sales is what the shopper endpoints that show SKUs need.
type Sales interface {
	SKU(ctx context.Context, id uint64) (*sale.SKUView, error)
	ListSKUs(ctx context.Context, states []string, after uint64, limit int) ([]sale.SKUView, uint64, error)
}

// Shop is what the shopper endpoints on orders need.
type Shop interface {
	Place(ctx context.Context, user string, in order.PlaceInput) (order.Placed, error)
	ListOrders(ctx context.Context, user string, cursor *order.Cursor, limit int) ([]order.View, *order.Cursor, error)
	Get(ctx context.Context, user, orderID string) (*order.View, error)
	Pay(ctx context.Context, user, orderID string) (*order.View, error)
	Cancel(ctx context.Context, user, orderID string) (*order.View, error)
}

func handleGetSKU(sales Sales, log *slog.Logger) gin.HandlerFunc {
	return skuAction(sales.SKU, log)
}

// placeRequest is a buy's body. A kind tag says what a field takes when a
// value of the wrong type comes (TestPlaceRequestKinds holds them to
// catalog.MaxID and order.MaxQty).
type placeRequest struct {
	SKU       uint64 `json:"sku_id" kind:"an integer from 1 to 9223372036854775807"`
	Qty       int    `json:"qty" kind:"an integer from 1 to 1000"`
	RequestID string `json:"request_id"`
	// Pass is the waiting room pass a buy of a SKU with a room carries.
	Pass string `json:"pass"`
}

// checkSKU refuses a sku_id no SKU can have (catalog.ValidID) as it is
// decoded, so that no store is asked about it.
func (r *placeRequest) checkSKU() error {
	if !catalog.ValidID(r.SKU) {
		return errSKUID("sku_id")
	}
	return nil
}

func errSKUID(name string) error {
	return invalid(name + " must be an integer from 1 to " + strconv.FormatUint(catalog.MaxID, 10))
}

func handlePlaceOrder(shop Shop, outcomes *buyOutcomes, log *slog.Logger) shopperHandler {
	return func(c *gin.Context, user string) {
		placed, err := place(c, shop, user)
		if err != nil {
			ae := answerOf(c, err)
			outcomes.count(ae.Code)
			writeAnswer(c, log, err, ae)
			return
		}
		outcomes.count("accepted")
		writeObject(c, http.StatusAccepted, "order_id", placed.OrderID, "status", placed.Status)
	}
}

// place reads the buy request and places it for user.
func place(c *gin.Context, shop Shop, user string) (order.Placed, error) {
	var req placeRequest
	body, err := readBody(c)
	if err == nil && !parsePlaceFast(body, &req) {
		err = decodeStrict(body, &req)
	}
	if err == nil {
		err = req.checkSKU()
	}
	if err != nil {
		return order.Placed{}, err
	}
	return shop.Place(c.Request.Context(), user, order.PlaceInput{SKU: req.SKU, Qty: req.Qty, RequestID: req.RequestID, Pass: req.Pass, Client: c.ClientIP()})
}

func handleGetOrder(shop Shop, log *slog.Logger) shopperHandler {
	return orderAction(shop.Get, log)
}

func handlePay(shop Shop, log *slog.Logger) shopperHandler {
	return orderAction(shop.Pay, log)
}

func handleCancel(shop Shop, log *slog.Logger) shopperHandler {
	return orderAction(shop.Cancel, log)
}

func orderAction(f func(ctx context.Context, user, orderID string) (*order.View, error), log *slog.Logger) shopperHandler {
	return func(c *gin.Context, user string) {
		v, err := f(c.Request.Context(), user, c.Param("order_id"))
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, v)
	}
}

// pathID parses a SKU id path parameter: an integer from 1 to
// catalog.MaxID, like every SKU id.
func pathID(c *gin.Context, name string) (uint64, error) {
	id, err := strconv.ParseUint(c.Param(name), 10, 64)
	if err != nil || !catalog.ValidID(id) {
		return 0, errSKUID(name)
	}
	return id, nil
}
