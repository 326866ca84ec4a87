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

var (
	// errViolation: verify found a SKU whose invariants do not hold.
	errViolation = errors.New("sale invariants violated")
	// errUnchecked: a check could not run (a store did not answer, a query
	// was refused), so verify cannot say whether it holds.
	errUnchecked = errors.New("not every check could run")
)

// skuPage is how many SKUs verify reads from MySQL at a time.
const skuPage = 500

func verifyCmd(e *env) *cobra.Command {
	var skus []uint
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the sale invariants; exit 1 on a violation, 3 when a check could not run",
		Long: `verify audits SKUs and prints one JSON report per SKU: stock, sold,
units left in Redis, queued, pending_payment, paid, cancelled, expired,
failed, dead letters, duplicate orders, and whether
redis_left + in_flight + queued + active units == stock and
sold <= stock (stock_total, the old name of stock, is still printed too). A SKU split into buckets is also reported per bucket
(units taken in Redis against its queued and active orders); one with a
waiting room, against its buyers, each admitted by the room (those Redis
lost the admission of with the room's state are counted, on stderr too,
and are not violations). It exits 1 when any SKU violates an invariant,
and 3 when none does but a check could not run (a store that did not
answer, a query refused): that is not a violation, and the other checks
still run. Without --sku it checks every SKU, whatever its sale window.
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
				ids := make([]uint64, 0, len(skus))
				for _, id := range skus {
					ids = append(ids, uint64(id))
				}
				return verify(cmd.Context(), e, a, ids)
			})
		},
	}
	cmd.Flags().UintSliceVar(&skus, "sku", nil, "SKU id to check (repeatable; default every SKU)")
	return cmd
}

// verify audits the SKUs ids (every SKU when empty), the payments and the
// events, reporting on e's stdout and stderr. A violation is errViolation;
// a check that could not run is reported, the others still run, and the
// result is errUnchecked unless something was violated.
func verify(ctx context.Context, e *env, a *app.App, ids []uint64) error {
	unchecked := 0
	if len(ids) == 0 {
		all, err := allSKUs(ctx, a.Catalog)
		if err != nil {
			return fmt.Errorf("%w: list the SKUs: %w", errUnchecked, err)
		}
		ids = all
	}
	enc := json.NewEncoder(e.stdout)
	bad, skipped := 0, 0
	for _, id := range ids {
		r, err := a.Sales.Audit(ctx, id)
		if err != nil {
			fmt.Fprintf(e.stderr, "verify: sku %d could not be checked: %v\n", id, err)
			skipped++
			unchecked++
			continue
		}
		_ = enc.Encode(r)
		if w := r.WaitingRoom; w != nil && w.StateLost {
			fmt.Fprintf(e.stderr, "verify: sku %d: Redis lost its waiting room's state: the admissions of %d buyer(s) before the loss cannot be checked (not a violation)\n", id, w.Unchecked)
		}
		if !r.Consistent {
			bad++
		}
	}
	if counts, err := order.PaymentCounts(ctx, a.DB); err != nil {
		fmt.Fprintf(e.stderr, "verify: payments could not be counted: %v\n", err)
		unchecked++
	} else {
		fmt.Fprintf(e.stderr, "verify: payments: %d applied, %d refund_due, %d mismatch\n",
			counts[order.PaymentApplied], counts[order.PaymentRefundDue], counts[order.PaymentMismatch])
	}
	if refunds, err := order.RefundCounts(ctx, a.DB); err != nil {
		fmt.Fprintf(e.stderr, "verify: refunds could not be counted: %v\n", err)
		unchecked++
	} else {
		fmt.Fprintf(e.stderr, "verify: refunds of orders cancelled after payment: %d due, %d issued\n",
			refunds[order.RefundDue], refunds[order.RefundIssued])
	}
	eventsOK, err := verifyEvents(ctx, e, a)
	if err != nil {
		fmt.Fprintf(e.stderr, "verify: events could not be checked: %v\n", err)
		unchecked++
	}
	switch {
	case !eventsOK || bad > 0:
		msg := fmt.Sprintf("in %d of %d sku(s)", bad, len(ids))
		if !eventsOK {
			msg = "order events do not match the orders, and " + msg
		}
		if unchecked > 0 {
			msg += fmt.Sprintf("; %d check(s) could not run", unchecked)
		}
		return fmt.Errorf("%w: %s", errViolation, msg)
	case unchecked > 0:
		return fmt.Errorf("%w: %d check(s) could not run (see above); %d of %d sku(s) checked and consistent",
			errUnchecked, unchecked, len(ids)-skipped, len(ids))
	}
	fmt.Fprintf(e.stderr, "verify: %d sku(s) consistent\n", len(ids))
	return nil
}

// allSKUs lists every SKU's id, a page at a time, by id alone (no time
// bound, which some MySQL-compatible servers read differently).
func allSKUs(ctx context.Context, c *catalog.Store) ([]uint64, error) {
	var ids []uint64
	for after := uint64(0); ; {
		page, err := c.Page(ctx, after, skuPage)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			ids = append(ids, s.ID)
		}
		if len(page) < skuPage {
			return ids, nil
		}
		after = page[len(page)-1].ID
	}
}

// verifyEvents reports the outbox's audit on stderr; ok is false when an
// order change lacks its event or an event its change, err when the audit
// could not run. Events off: nothing to check.
func verifyEvents(ctx context.Context, e *env, a *app.App) (ok bool, err error) {
	if !a.Cfg.Events.On() {
		return true, nil
	}
	r, err := outbox.Audit(ctx, a.DB, time.Now(), a.Cfg.Events.Retention)
	if err != nil {
		return true, err
	}
	for _, c := range r.Receivers {
		fmt.Fprintf(e.stderr, "verify: events to %s: %d pending, %d delivered, %d dead\n", c.Receiver, c.Pending, c.Delivered, c.Dead)
	}
	if !r.OK() {
		b, _ := json.Marshal(r)
		fmt.Fprintf(e.stderr, "verify: events do not match the orders: %s\n", b)
	}
	return r.OK(), nil
}
