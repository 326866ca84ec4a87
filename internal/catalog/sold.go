package catalog

import (
	"time"

	"gorm.io/gorm"
)

// AddSold counts n more units of SKU id sold, in the caller's transaction tx,
// unless that would pass its stock_total: this guard is what keeps SQL from
// overselling whatever Redis says. false means refused (nothing changed).
func AddSold(tx *gorm.DB, id uint64, n int64, now time.Time) (bool, error) {
	res := tx.Exec("UPDATE skus SET sold = sold + ?, updated_at = ? WHERE id = ? AND sold + ? <= stock_total", n, now, id, n)
	return res.RowsAffected == 1, res.Error
}

// SubtractSold takes n units of SKU id off sold, in the caller's transaction
// tx: the units of an order that was cancelled or expired.
func SubtractSold(tx *gorm.DB, id uint64, n int64, now time.Time) error {
	return tx.Exec("UPDATE skus SET sold = sold - ?, updated_at = ? WHERE id = ?", n, now, id).Error
}
