package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/outbox"
)

// errViolation: verify found a SKU whose invariants do not hold.
var errViolation = errors.New("sale invariants violated")

func verifyCmd(e *env) *cobra.Command {
	var skus []uint
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the sale invariants; exit 1 on a violation",
		Long: `verify audits SKUs and prints one JSON report per SKU: stock, sold,
units left in Redis, queued, pending_payment, paid, cancelled, expired,
failed, dead letters, duplicate orders, and whether
redis_left + in_flight + queued + active units == stock and
sold <= stock (stock_total, the old name of stock, is still printed too). A SKU split into buckets is also reported per bucket
(units taken in Redis against its queued and active orders); one with a
waiting room, against its buyers, each admitted by the room (those Redis
lost the admission of with the room's state are counted, on stderr too,
and are not violations). It exits 1 when any SKU violates an invariant.
Without --sku it checks every SKU.
Last, on stderr, it counts the payment notifications recorded by outcome:
applied, refund_due (money the shop owes back: GET /admin/payments?status=
refund_due lists them) and mismatch; these are not violations. With
events on (events.webhook_url or events.nats_url), it checks the outbox
against the orders: every order change since the oldest event kept has
its event (order.created, .paid, .cancelled, .expired, .failed,
payment.refund_due) and every event its change; a gap is a violation,
printed as JSON on stderr. It counts events pending, delivered and dead.

It reads the servers' Redis and MySQL (SECKILL_REDIS_ADDRS,
SECKILL_MYSQL_DSN or --config); in embedded mode it refuses, exit 2, and
names GET /admin/skus/{id}/audit, which reports the same on the server.`,
		Example: `  seckill verify --sku 1
  seckill verify                 # every SKU`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, id := range skus {
				if !catalog.ValidID(uint64(id)) {
					return usageError{fmt.Errorf("--sku %d: must be from 1 to %d", id, uint64(catalog.MaxID))}
				}
			}
			return e.withApp(cmd.Context(), verifyWork(skus), func(a *app.App) error {
				var ids []uint64
				for _, id := range skus {
					ids = append(ids, uint64(id))
				}
				if len(ids) == 0 {
					all, err := a.Catalog.List(cmd.Context(), time.Time{})
					if err != nil {
						return err
					}
					for _, s := range all {
						ids = append(ids, s.ID)
					}
				}
				enc := json.NewEncoder(e.stdout)
				bad := 0
				for _, id := range ids {
					r, err := a.Sales.Audit(cmd.Context(), id)
					if err != nil {
						return fmt.Errorf("verify sku %d: %w", id, err)
					}
					_ = enc.Encode(r)
					if w := r.WaitingRoom; w != nil && w.StateLost {
						fmt.Fprintf(e.stderr, "verify: sku %d: Redis lost its waiting room's state: the admissions of %d buyer(s) before the loss cannot be checked (not a violation)\n", id, w.Unchecked)
					}
					if !r.Consistent {
						bad++
					}
				}
				counts, err := order.PaymentCounts(cmd.Context(), a.DB)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "verify: payments: %d applied, %d refund_due, %d mismatch\n",
					counts[order.PaymentApplied], counts[order.PaymentRefundDue], counts[order.PaymentMismatch])
				refunds, err := order.RefundCounts(cmd.Context(), a.DB)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "verify: refunds of orders cancelled after payment: %d due, %d issued\n",
					refunds[order.RefundDue], refunds[order.RefundIssued])
				if !verifyEvents(cmd.Context(), e, a) {
					return fmt.Errorf("%w: order events do not match the orders", errViolation)
				}
				if bad > 0 {
					return fmt.Errorf("%w in %d of %d sku(s)", errViolation, bad, len(ids))
				}
				fmt.Fprintf(e.stderr, "verify: %d sku(s) consistent\n", len(ids))
				return nil
			})
		},
	}
	cmd.Flags().UintSliceVar(&skus, "sku", nil, "SKU id to check (repeatable; default every SKU)")
	return cmd
}

// verifyEvents reports the outbox's audit on stderr; false when an order
// change lacks its event or an event its change. Events off: nothing to
// check.
func verifyEvents(ctx context.Context, e *env, a *app.App) bool {
	if !a.Cfg.Events.On() {
		return true
	}
	r, err := outbox.Audit(ctx, a.DB, time.Now(), a.Cfg.Events.Retention)
	if err != nil {
		fmt.Fprintf(e.stderr, "verify: events: %v\n", err)
		return false
	}
	for _, c := range r.Receivers {
		fmt.Fprintf(e.stderr, "verify: events to %s: %d pending, %d delivered, %d dead\n", c.Receiver, c.Pending, c.Delivered, c.Dead)
	}
	if !r.OK() {
		b, _ := json.Marshal(r)
		fmt.Fprintf(e.stderr, "verify: events do not match the orders: %s\n", b)
	}
	return r.OK()
}
