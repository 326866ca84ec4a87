package sale

import (
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
)

// heldStatuses are the statuses of the orders whose units a shopper holds.
var heldStatuses = []string{order.StatusPendingPayment, order.StatusPaid}

// limitStatuses are the statuses of the orders whose units count against a
// shopper's per-user limit of sku: those they hold and, when the SKU's
// limit counts them, their cancelled and expired ones. A failed order never
// counts: SQL's stock guard refused it, or an operator voided it (deleted
// its dead letter before it reached SQL).
func limitStatuses(sku *catalog.SKU) []string {
	if !sku.LimitCountsCancelled {
		return heldStatuses
	}
	return append(slices.Clone(heldStatuses), order.StatusCancelled, order.StatusExpired)
}

// limitCounts are sku's shoppers' counts against its per-user limit, from
// SQL: the units each holds, the units of their closed orders the limit
// counts (kept), and the units held in all.
type limitCounts struct {
	held, kept map[string]int64
	active     int64
}

// countLimits reads sku's limitCounts in db (a transaction's snapshot, when
// it is one).
func countLimits(db *gorm.DB, sku *catalog.SKU) (limitCounts, error) {
	var rows []struct {
		UserID string
		Status string
		Units  int64
	}
	if err := db.Model(&order.Order{}).Select("user_id, status, SUM(qty) AS units").
		Where("sku_id = ? AND status IN ?", sku.ID, limitStatuses(sku)).
		Group("user_id, status").Scan(&rows).Error; err != nil {
		return limitCounts{}, fmt.Errorf("sale: count sku %d's shoppers: %w", sku.ID, err)
	}
	c := limitCounts{held: map[string]int64{}, kept: map[string]int64{}}
	for _, row := range rows {
		if slices.Contains(heldStatuses, row.Status) {
			c.held[row.UserID] += row.Units
			c.active += row.Units
		} else {
			c.kept[row.UserID] += row.Units
		}
	}
	return c, nil
}
