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
names its columns. Times are RFC 3339, kept to the millisecond.

A YAML SKU's keys are id, name, price_cents, stock, per_user_limit, starts_at,
ends_at, buckets, hidden, limit_counts_cancelled and waiting_room, an object
with the keys opens_at, mode, admit_per_second, pass_ttl, overbook and
pow_bits. A CSV
file's columns are any of id, name, price_cents, stock, per_user_limit,
starts_at, ends_at, buckets, limit_counts_cancelled, and the waiting room's
room_opens_at, room_mode, room_admit_per_second, room_pass_ttl,
room_overbook and room_pow_bits, in any order. A whole number is one (0.99 is refused, not cut
to 0), a number is finite, and a YAML file is one document.

A new SKU needs every field but id and buckets: name, price_cents, stock,
per_user_limit, starts_at and ends_at. None has a default: a price left out
is not a free sale (give --price-cents 0 for one) and a start left out is not
"now".

A SKU with an id that exists is updated: only the fields given change (a
flag, a YAML key, a CSV cell), the others are kept. A YAML key left out or
null, and an empty CSV cell, are not given. The stock is never set below what
is sold. So re-running a seed file changes nothing, and
  seckill seed --id 1 --name "Phone X Pro"
renames SKU 1 and leaves its price, stock, limit and window as they are.

A file is written whole or not at all. Every SKU is checked first, against
what is stored and as the file's earlier rows leave it; then all are written
in one MySQL transaction. A refusal exits 2 (1 for another bucket count or a
stock below what is sold), names the file's line and the field, and writes
nothing. A SKU without an id gets one no row of the file names.

buckets (--buckets, 1 to 64) splits a SKU's stock in Redis over that many
hash tags, so that one hot SKU's buys spread over as many Redis Cluster
shards (see docs/design/buckets.md). It is fixed when the SKU is created: left out
(or 0), a new SKU gets 1 and an existing one keeps its count; another count
for an existing SKU is refused and nothing is written.

limit_counts_cancelled (--limit-counts-cancelled, true or false) says whether
per_user_limit counts the units of a shopper's cancelled and expired orders
too. true, the default for a new SKU: a shopper who cancels cannot buy again
past the limit. false: a cancel or an expiry gives the shopper's count back.
Left out, an existing SKU keeps its setting. hidden (YAML only) leaves a SKU
out of the shop's list.

waiting_room gives a new SKU a waiting room (only opens_at is required; see
docs/shop/waiting-room.md); a re-seed may give the SKU's own room again,
another is refused. Once a random room's seed is public (from starts_at), a
window that would start after now is refused: create a new SKU instead.`,
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
			var seed seedfile.File
			if file != "" {
				for _, name := range skuFlags {
					if cmd.Flags().Changed(name) {
						return usageError{fmt.Errorf("give either --file or the SKU flags (--%s), not both", name)}
					}
				}
				var err error
				if seed, err = readFile(file); err != nil {
					return usageError{err}
				}
			} else {
				spec, err := in.spec(cmd.Flags().Changed)
				if err != nil {
					return usageError{err}
				}
				seed.Rows = []seedfile.Row{{Spec: spec}}
			}
			rows := seed.Rows
			specs := make([]catalog.Spec, len(rows))
			for i := range rows {
				if err := rows[i].Spec.Validate(); err != nil {
					return usageError{withFile(file, fmt.Errorf("%s: %w", rows[i].Name(), err))}
				}
				// Without an id the SKU is new: known before connecting.
				if rows[i].Spec.ID == 0 {
					if err := seedfile.NeedsAll(rows[i]); err != nil {
						return usageError{withFile(file, err)}
					}
				}
				specs[i] = rows[i].Spec
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
			seeded, drops, err := a.Sales.Seed(cmd.Context(), seed)
			if errors.Is(err, catalog.ErrInvalid) {
				return usageError{withFile(file, err)}
			}
			if err != nil {
				return withFile(file, err)
			}
			enc := json.NewEncoder(e.stdout)
			for _, s := range seeded {
				_ = enc.Encode(s)
			}
			for _, d := range drops {
				_ = enc.Encode(map[string]any{"drop": d})
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

// readFile reads the SKUs and drops of a seed file: YAML, or a CSV file
// with a header row (seedfile.Read).
func readFile(path string) (seedfile.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return seedfile.File{}, err
	}
	defer func() { _ = f.Close() }()
	file, err := seedfile.Read(f, seedfile.FormatOf(path))
	return file, withFile(path, err)
}

// withFile names the seed file path in err, whose lines it names; nil
// stays nil, and so does the file of seed's flags ("").
func withFile(path string, err error) error {
	if err == nil || path == "" {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}
