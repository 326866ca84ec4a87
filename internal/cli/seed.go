package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/seedfile"
)

// skuFlags are seed's flags that give one SKU's fields; each one left out
// is a field not given.
var skuFlags = []string{"id", "name", "price-cents", "stock", "per-user-limit", "buckets", "starts-at", "ends-at", "limit-counts-cancelled"}

func seedCmd(e *env) *cobra.Command {
	var in flagSKU
	var file string
	cmd := &cobra.Command{
		Use:   "seed",
		Short: "Seed sale inventory (SKUs) from flags or a YAML/CSV file",
		Long: `seed writes SKUs to MySQL and warms their stock in Redis. Give one SKU with
flags, or many with --file: a YAML list of objects, or a CSV file whose header
names its columns (id, name, price_cents, stock, per_user_limit, starts_at,
ends_at, buckets, limit_counts_cancelled; any of them, in any order). Times
are RFC 3339.

A new SKU needs every field but id and buckets: name, price_cents, stock,
per_user_limit, starts_at and ends_at. None has a default: a price left out
is not a free sale (give --price-cents 0 for one) and a start left out is not
"now". A new SKU missing one is refused naming it, exit 2, and nothing is
written, not even the other SKUs of the file.

A SKU with an id that exists is updated: only the fields given change (a
flag, a YAML key, a CSV cell), the others are kept. A YAML key left out or
null, and an empty CSV cell, are not given. The stock is never set below what
is sold. So re-running a seed file changes nothing, and
  seckill seed --id 1 --name "Phone X Pro"
renames SKU 1 and leaves its price, stock, limit and window as they are.

buckets (--buckets, 1 to 64) splits a SKU's stock in Redis over that many
hash tags, so that one hot SKU's buys spread over as many Redis Cluster
shards (see docs/design/buckets.md). It is fixed when the SKU is created: left out
(or 0), a new SKU gets 1 and an existing one keeps its count; another count
for an existing SKU is refused and nothing is written.

limit_counts_cancelled (--limit-counts-cancelled, true or false) says whether
per_user_limit counts the units of a shopper's cancelled and expired orders
too. true, the default for a new SKU: a shopper who cancels cannot buy again
past the limit. false: a cancel or an expiry gives the shopper's count back.
Left out, an existing SKU keeps its setting.`,
		Example: `  seckill seed --id 1 --name "Phone X" --price-cents 99900 --stock 10 --per-user-limit 1 \
      --starts-at 2026-11-11T00:00:00Z --ends-at 2026-11-11T01:00:00Z
  seckill seed --id 1 --name "Phone X Pro"      # SKU 1 exists: only its name changes
  seckill seed --id 1 --stock 20                 # a top-up (or a cut, never below what is sold)
  seckill seed --id 2 --name "Gift" --price-cents 0 --stock 100000 --per-user-limit 1 --buckets 16 \
      --starts-at 2026-11-11T00:00:00Z --ends-at 2026-11-11T01:00:00Z
  seckill seed --id 2 --limit-counts-cancelled=false   # a cancel gives a shopper's limit back
  seckill seed --file configs/skus.example.yaml   # a YAML list of SKUs
  seckill seed --file configs/skus.example.csv    # a CSV file with a header row`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var specs []catalog.Spec
			if file != "" {
				for _, name := range skuFlags {
					if cmd.Flags().Changed(name) {
						return usageError{fmt.Errorf("give either --file or the SKU flags (--%s), not both", name)}
					}
				}
				var err error
				if specs, err = readSpecs(file); err != nil {
					return usageError{err}
				}
			} else {
				spec, err := in.spec(cmd.Flags().Changed)
				if err != nil {
					return usageError{err}
				}
				specs = []catalog.Spec{spec}
			}
			for i := range specs {
				if err := specs[i].Validate(); err != nil {
					return usageError{fmt.Errorf("%s: %w", seedfile.Name(i, specs[i]), err)}
				}
				// Without an id the SKU is new: known before connecting.
				if specs[i].ID == 0 {
					if err := seedfile.NeedsAll(i, specs[i], file == ""); err != nil {
						return usageError{err}
					}
				}
			}
			cfg, log, err := e.load()
			if err != nil {
				return err
			}
			if err := refusePrivate(cfg, seedWork(specs)); err != nil {
				return err
			}
			a, err := app.Open(cmd.Context(), cfg, log, cfg.MySQL.MigrateOnStart)
			if err != nil {
				return err
			}
			defer a.Close()
			err = seedfile.CheckNew(cmd.Context(), a.Catalog, specs, file == "")
			if err == nil {
				err = a.Sales.CheckSeed(cmd.Context(), specs)
			}
			if errors.Is(err, catalog.ErrInvalid) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			enc := json.NewEncoder(e.stdout)
			for i, s := range specs {
				v, created, err := a.Sales.UpsertSKU(cmd.Context(), s)
				if errors.Is(err, catalog.ErrInvalid) {
					return usageError{fmt.Errorf("seed %s: %w", seedfile.Label(i, s), err)}
				}
				if err != nil {
					return fmt.Errorf("seed %s: %w", seedfile.Label(i, s), err)
				}
				_ = enc.Encode(struct {
					Created bool `json:"created"`
					SKU     any  `json:"sku"`
				}{created, v})
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "YAML or CSV file of SKUs")
	f.Uint64Var(&in.id, "id", 0, "SKU id, 1 to 9223372036854775807 (optional; makes re-seeding idempotent; an existing id is updated)")
	f.StringVar(&in.name, "name", "", "SKU name (required for a new SKU)")
	f.Int64Var(&in.price, "price-cents", 0, "price in cents; 0 is a free sale (required for a new SKU: left out is not 0)")
	f.Int64Var(&in.stock, "stock", 0, "units on sale (required for a new SKU)")
	f.IntVar(&in.limit, "per-user-limit", 0, "most units one shopper may buy, 1 to 1000 (required for a new SKU)")
	f.IntVar(&in.buckets, "buckets", 0, "Redis hash tags the stock is split over, 1 to 64; fixed at creation (left out: 1 when new, kept when the SKU exists)")
	f.StringVar(&in.starts, "starts-at", "", "sale start, RFC 3339 (required for a new SKU)")
	f.StringVar(&in.ends, "ends-at", "", "sale end, RFC 3339 (required for a new SKU)")
	f.BoolVar(&in.counts, "limit-counts-cancelled", true, "the per-user limit counts the shopper's cancelled and expired orders too; =false: a cancel gives the count back (left out: kept when the SKU exists)")
	return cmd
}

// flagSKU holds seed's SKU flags as parsed.
type flagSKU struct {
	id                 uint64
	name, starts, ends string
	price, stock       int64
	limit, buckets     int
	counts             bool // --limit-counts-cancelled
}

// spec is the SKU the flags give: a flag left out (changed says which were
// given) is a field not given.
func (in *flagSKU) spec(changed func(string) bool) (catalog.Spec, error) {
	s := catalog.Spec{ID: in.id, Buckets: in.buckets}
	if changed("name") {
		s.Name = &in.name
	}
	if changed("price-cents") {
		s.PriceCents = &in.price
	}
	if changed("stock") {
		s.Stock = &in.stock
	}
	if changed("per-user-limit") {
		s.PerUserLimit = &in.limit
	}
	if changed("limit-counts-cancelled") {
		s.LimitCountsCancelled = &in.counts
	}
	for _, t := range []struct {
		flag, value string
		to          **time.Time
	}{{"starts-at", in.starts, &s.StartsAt}, {"ends-at", in.ends, &s.EndsAt}} {
		if !changed(t.flag) {
			continue
		}
		v, err := seedfile.ParseTime("--"+t.flag, t.value)
		if err != nil {
			return catalog.Spec{}, err
		}
		if v.IsZero() {
			return catalog.Spec{}, fmt.Errorf("--%s: want RFC 3339 such as 2026-11-11T00:00:00Z, not an empty string", t.flag)
		}
		*t.to = &v
	}
	return s, nil
}

// readSpecs reads SKUs from a YAML list or a CSV file with a header row
// (seedfile.Read).
func readSpecs(path string) ([]catalog.Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	specs, err := seedfile.Read(f, seedfile.FormatOf(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return specs, nil
}
