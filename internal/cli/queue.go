package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/catalog"
)

func queueCmd(e *env) *cobra.Command {
	var sku uint
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "Inspect a SKU's order queue and act on its dead letters",
		Long: `queue shows the depths of a SKU's queue (due, delayed, in flight, dead) and
its next tasks, lists dead letters, and requeues or drops them. A dead letter
is an order task that failed every attempt; it stays until an operator acts.
Dropping a dead order gives its units back to the sale.

Like seed and verify, it acts on the servers' Redis and MySQL
(SECKILL_REDIS_ADDRS, SECKILL_MYSQL_DSN or --config).`,
		Example: `  seckill queue stats --sku 1
  seckill queue dead --sku 1                   # then: seckill queue requeue|drop --sku 1 TASK_ID`,
	}
	cmd.PersistentFlags().UintVar(&sku, "sku", 0, "SKU id (required)")
	// forSKU checks --sku, then runs f with the application open; w is
	// what the command does, for the refusal of stores of its own.
	forSKU := func(cmd *cobra.Command, w func() work, f func(ctx context.Context, a *app.App) error) error {
		if sku == 0 {
			return usageError{errors.New("--sku is required")}
		}
		if !catalog.ValidID(uint64(sku)) {
			return usageError{fmt.Errorf("--sku must be from 1 to %d", uint64(catalog.MaxID))}
		}
		return e.withApp(cmd.Context(), w(), func(a *app.App) error { return f(cmd.Context(), a) })
	}
	var n, offset int
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	// show prints what get returns as JSON.
	show := func(sub string, get func(ctx context.Context, a *app.App) (any, error)) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			w := func() work { return queueWork(sub, sku, n, offset, "") }
			return forSKU(cmd, w, func(ctx context.Context, a *app.App) error {
				v, err := get(ctx, a)
				if err != nil {
					return err
				}
				return enc.Encode(v)
			})
		}
	}

	stats := &cobra.Command{
		Use: "stats", Short: "Depths of the queue and its next pending tasks", Args: cobra.NoArgs,
		Example: "  seckill queue stats --sku 1 -n 5",
		RunE: show("stats", func(ctx context.Context, a *app.App) (any, error) {
			return a.Sales.Queue(ctx, uint64(sku), n)
		}),
	}
	stats.Flags().IntVarP(&n, "n", "n", 10, "pending tasks to show")
	dead := &cobra.Command{
		Use: "dead", Short: "List dead letters", Args: cobra.NoArgs,
		Example: "  seckill queue dead --sku 1 --offset 100 -n 100",
		RunE: show("dead", func(ctx context.Context, a *app.App) (any, error) {
			return a.Sales.DeadLetters(ctx, uint64(sku), offset, n)
		}),
	}
	dead.Flags().IntVarP(&n, "n", "n", 100, "dead letters to list")
	dead.Flags().IntVar(&offset, "offset", 0, "skip this many")
	act := func(use, short, example, done string, f func(ctx context.Context, a *app.App, id string) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " TASK_ID", Short: short, Example: example, Args: cobra.ExactArgs(1),
			Annotations: map[string]string{"example": "not run (needs a dead letter, a task that failed every attempt; internal/app's dead-letter tests requeue and drop them)"},
			RunE: func(cmd *cobra.Command, args []string) error {
				w := func() work { return queueWork(use, sku, 0, 0, args[0]) }
				err := forSKU(cmd, w, func(ctx context.Context, a *app.App) error { return f(ctx, a, args[0]) })
				if err != nil {
					return err
				}
				fmt.Fprintln(e.stdout, done, args[0])
				return nil
			},
		}
	}
	cmd.AddCommand(stats, dead,
		act("requeue", "Put a dead letter back in work with fresh attempts", "  seckill queue requeue --sku 42 TASK_ID", "requeued",
			func(ctx context.Context, a *app.App, id string) error {
				return a.Sales.RequeueDead(ctx, uint64(sku), id)
			}),
		act("drop", "Delete a dead letter (a dropped order's units go back on sale)", "  seckill queue drop --sku 42 TASK_ID", "dropped",
			func(ctx context.Context, a *app.App, id string) error {
				return a.Sales.DeleteDead(ctx, uint64(sku), id)
			}),
	)
	return cmd
}
