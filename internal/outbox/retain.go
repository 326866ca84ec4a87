package outbox

import (
	"context"
	"errors"
	"slices"
	"time"

	"gorm.io/gorm"
)

// retainBatch is how many rows one delete of the upkeep removes at most.
const retainBatch = 1000

// maintain is a dispatcher's upkeep, once a minute: it marks its sinks
// seen, drops the receivers no dispatcher has had for Retention (and the
// copies of everyReceiver once they are due to go), and deletes delivered
// deliveries and the events no receiver needs past Retention.
func (d *Dispatcher) maintain(ctx context.Context) error {
	now := d.o.Now().UTC()
	if names := d.names(); len(names) > 0 {
		if err := d.db.WithContext(ctx).Model(&registration{}).Where("name IN ?", names).Update("seen_at", now).Error; err != nil {
			return err
		}
	}
	return errors.Join(d.forget(ctx, now), d.retain(ctx, now))
}

// names are the names of d's sinks.
func (d *Dispatcher) names() []string {
	names := make([]string, len(d.o.Sinks))
	for i, s := range d.o.Sinks {
		names[i] = s.Name()
	}
	return names
}

// forget drops the receivers no dispatcher has had since Retention before
// now, and everyReceiver once a receiver was registered MaxAge before now
// (the receivers of an upgrade have had their copies of it by then); then
// the deliveries of receivers that are no more, a batch at a time. A
// receiver configured again after that begins anew.
func (d *Dispatcher) forget(ctx context.Context, now time.Time) error {
	db := d.db.WithContext(ctx)
	if err := db.Where("name <> ? AND seen_at < ?", everyReceiver, now.Add(-d.o.Retention)).Delete(&registration{}).Error; err != nil {
		return err
	}
	var old int64
	if err := db.Model(&registration{}).Where("name <> ? AND created_at < ?", everyReceiver, now.Add(-d.o.MaxAge)).
		Count(&old).Error; err != nil {
		return err
	}
	if old > 0 {
		if err := db.Where("name = ?", everyReceiver).Delete(&registration{}).Error; err != nil {
			return err
		}
	}
	var have, known []string
	if err := db.Model(&Delivery{}).Distinct("receiver").Pluck("receiver", &have).Error; err != nil {
		return err
	}
	if err := db.Model(&registration{}).Pluck("name", &known).Error; err != nil {
		return err
	}
	for _, name := range have {
		if slices.Contains(known, name) {
			continue
		}
		n, err := d.deleteBatches(ctx, &Delivery{}, "id", func(tx *gorm.DB) *gorm.DB {
			return tx.Where("receiver = ?", name)
		})
		if err != nil {
			return err
		}
		d.o.Log.Warn("events: receiver dropped: no dispatcher has had it for events.retention",
			"receiver", name, "deliveries", n)
	}
	return nil
}

// retain deletes the deliveries delivered Retention before now, then the
// events written before that of which no delivery is left.
func (d *Dispatcher) retain(ctx context.Context, now time.Time) error {
	before := now.Add(-d.o.Retention)
	_, err := d.deleteBatches(ctx, &Delivery{}, "delivered_at", func(tx *gorm.DB) *gorm.DB {
		return tx.Where("status = ? AND delivered_at < ?", StatusDelivered, before)
	})
	if err != nil {
		return err
	}
	n, err := d.deleteBatches(ctx, &Event{}, "created_at", func(tx *gorm.DB) *gorm.DB {
		return tx.Where("created_at < ? AND NOT EXISTS (SELECT 1 FROM outbox_deliveries d WHERE d.event_row = outbox.id)", before)
	})
	d.o.Metrics.deleted(n)
	return err
}

// deleteBatches deletes the rows of model that where selects, retainBatch
// at a time in the order of column order, and returns how many. A row that
// where no longer selects when it is deleted stays.
func (d *Dispatcher) deleteBatches(ctx context.Context, model any, order string, where func(*gorm.DB) *gorm.DB) (int, error) {
	deleted := 0
	for ctx.Err() == nil {
		var ids []uint64
		if err := where(d.db.WithContext(ctx).Model(model)).Order(order).Limit(retainBatch).Pluck("id", &ids).Error; err != nil {
			return deleted, err
		}
		if len(ids) == 0 {
			return deleted, nil
		}
		res := where(d.db.WithContext(ctx)).Where("id IN ?", ids).Delete(model)
		if res.Error != nil {
			return deleted, res.Error
		}
		deleted += int(res.RowsAffected)
		if len(ids) < retainBatch {
			return deleted, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return deleted, nil
}

// gauge refreshes the backlog gauges of d's sinks.
func (d *Dispatcher) gauge(ctx context.Context) error {
	if d.o.Metrics == nil {
		return nil
	}
	now := d.o.Now()
	for _, name := range d.names() {
		c, err := backlog(ctx, d.db, name, now)
		if err != nil {
			return err
		}
		d.o.Metrics.backlog(name, c)
	}
	return nil
}
