package order

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// LastOrders returns the shoppers with an order of sku in SQL, whatever
// its status, and when they placed their last one, reading db.
func LastOrders(db *gorm.DB, sku uint64) (map[string]time.Time, error) {
	rows, err := db.Model(&Order{}).Select("user_id, created_at").Where("sku_id = ?", sku).Rows()
	if err != nil {
		return nil, fmt.Errorf("order: buyers of sku %d: %w", sku, err)
	}
	defer func() { _ = rows.Close() }()
	last := map[string]time.Time{}
	for rows.Next() {
		var user string
		var at time.Time
		if err := rows.Scan(&user, &at); err != nil {
			return nil, fmt.Errorf("order: buyers of sku %d: %w", sku, err)
		}
		if at.After(last[user]) {
			last[user] = at
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("order: buyers of sku %d: %w", sku, err)
	}
	return last, nil
}
