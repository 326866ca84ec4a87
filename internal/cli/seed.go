package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/catalog"
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
shards (see docs/SCALING.md). It is fixed when the SKU is created: left out
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
					return usageError{fmt.Errorf("%s: %w", specName(i, specs[i]), err)}
				}
				// Without an id the SKU is new: known before connecting.
				if specs[i].ID == 0 {
					if err := needsAll(i, specs[i], file == ""); err != nil {
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
			if err := checkNew(cmd.Context(), a.Catalog, specs, file == ""); err != nil {
				return err
			}
			enc := json.NewEncoder(e.stdout)
			for i, s := range specs {
				v, created, err := a.Sales.UpsertSKU(cmd.Context(), s)
				if errors.Is(err, catalog.ErrInvalid) {
					return usageError{fmt.Errorf("seed %s: %w", specLabel(i, s), err)}
				}
				if err != nil {
					return fmt.Errorf("seed %s: %w", specLabel(i, s), err)
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
		v, err := parseTime("--"+t.flag, t.value)
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

// checkNew refuses, before anything is written, a SKU of specs that is new
// (its id unknown to skus and not seeded earlier in specs) and misses a
// required field.
func checkNew(ctx context.Context, skus *catalog.Store, specs []catalog.Spec, flags bool) error {
	seen := map[uint64]bool{}
	for i, s := range specs {
		if s.ID == 0 || seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		_, err := skus.Get(ctx, s.ID)
		if errors.Is(err, catalog.ErrNotFound) {
			if err := needsAll(i, s, flags); err != nil {
				return usageError{err}
			}
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// needsAll reports the required fields the new SKU s, the i-th of its
// file, does not give, with their flags when it comes from flags.
func needsAll(i int, s catalog.Spec, flags bool) error {
	missing := s.Missing()
	if len(missing) == 0 {
		return nil
	}
	if flags {
		for j, m := range missing {
			missing[j] = fmt.Sprintf("%s (--%s)", m, strings.ReplaceAll(m, "_", "-"))
		}
	}
	return fmt.Errorf("%s is new and needs %s: a field left out is not 0 (give price_cents 0 for a free sale)",
		specName(i, s), strings.Join(missing, ", "))
}

// specName names the i-th SKU of a seed in a usage error.
func specName(i int, s catalog.Spec) string {
	var about []string
	if s.ID != 0 {
		about = append(about, fmt.Sprintf("id %d", s.ID))
	}
	if s.Name != nil {
		about = append(about, strconv.Quote(*s.Name))
	}
	if len(about) == 0 {
		return fmt.Sprintf("sku %d", i+1)
	}
	return fmt.Sprintf("sku %d (%s)", i+1, strings.Join(about, ", "))
}

// specLabel names a SKU in the error of its seed: by its name when given.
func specLabel(i int, s catalog.Spec) string {
	if s.Name != nil {
		return strconv.Quote(*s.Name)
	}
	return specName(i, s)
}

func parseTime(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: want RFC 3339 such as 2026-11-11T00:00:00Z: %w", flag, err)
	}
	return t, nil
}

// readSpecs reads SKUs from a YAML list or a CSV file with a header row. A
// key left out (or null) and an empty cell are fields not given.
func readSpecs(path string) ([]catalog.Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return readCSV(f)
	}
	var specs []catalog.Spec
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return specs, nil
}

// csvColumns are the columns a CSV seed file may have.
var csvColumns = []string{"id", "name", "price_cents", "stock", "per_user_limit", "starts_at", "ends_at", "buckets", "limit_counts_cancelled",
	"room_opens_at", "room_mode", "room_admit_per_second", "room_pass_ttl", "room_overbook"}

func readCSV(r io.Reader) ([]catalog.Spec, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	if len(rows) == 0 {
		return nil, errors.New("csv: empty file")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		h = strings.TrimSpace(strings.ToLower(h))
		if !slices.Contains(csvColumns, h) {
			return nil, fmt.Errorf("csv: unknown column %q (the columns are %s)", h, strings.Join(csvColumns, ", "))
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("csv: column %q twice", h)
		}
		col[h] = i
	}
	var specs []catalog.Spec
	for n, row := range rows[1:] {
		// An empty cell, or a column the file does not have, is not given.
		get := func(name string) (string, bool) {
			if i, ok := col[name]; ok && i < len(row) {
				v := strings.TrimSpace(row[i])
				return v, v != ""
			}
			return "", false
		}
		var s catalog.Spec
		var errs []error
		num := func(name string, bits int) *int64 {
			v, ok := get(name)
			if !ok {
				return nil
			}
			n, err := strconv.ParseInt(v, 10, bits)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			return &n
		}
		if id, ok := get("id"); ok {
			v, err := strconv.ParseUint(id, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("id: %w", err))
			}
			s.ID = v
		}
		if name, ok := get("name"); ok {
			s.Name = &name
		}
		s.PriceCents = num("price_cents", 64)
		s.Stock = num("stock", 64)
		if v := num("per_user_limit", 32); v != nil {
			s.PerUserLimit = ptr(int(*v))
		}
		if v := num("buckets", 32); v != nil {
			s.Buckets = int(*v)
		}
		if v, ok := get("limit_counts_cancelled"); ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("limit_counts_cancelled: want true or false: %w", err))
			}
			s.LimitCountsCancelled = &b
		}
		for _, t := range []struct {
			name string
			to   **time.Time
		}{{"starts_at", &s.StartsAt}, {"ends_at", &s.EndsAt}} {
			v, ok := get(t.name)
			if !ok {
				continue
			}
			at, err := parseTime(t.name, v)
			if err != nil {
				errs = append(errs, err)
			}
			*t.to = &at
		}
		// A waiting room: room_opens_at gives one, the other room_
		// columns set it.
		if v, ok := get("room_opens_at"); ok {
			at, err := parseTime("room_opens_at", v)
			if err != nil {
				errs = append(errs, err)
			}
			r := &catalog.RoomSpec{OpensAt: &at}
			r.Mode, _ = get("room_mode")
			if v := num("room_admit_per_second", 32); v != nil {
				r.AdmitPerSecond = int(*v)
			}
			if v, ok := get("room_pass_ttl"); ok {
				if err := r.PassTTL.UnmarshalText([]byte(v)); err != nil {
					errs = append(errs, err)
				}
			}
			if v, ok := get("room_overbook"); ok {
				if r.Overbook, err = strconv.ParseFloat(v, 64); err != nil {
					errs = append(errs, fmt.Errorf("room_overbook: %w", err))
				}
			}
			s.WaitingRoom = r
		} else {
			for _, c := range []string{"room_mode", "room_admit_per_second", "room_pass_ttl", "room_overbook"} {
				if _, ok := get(c); ok {
					errs = append(errs, fmt.Errorf("%s: a waiting room needs room_opens_at", c))
				}
			}
		}
		if len(errs) > 0 {
			return nil, fmt.Errorf("csv line %d: %w", n+2, errors.Join(errs...))
		}
		specs = append(specs, s)
	}
	return specs, nil
}

func ptr[T any](v T) *T { return &v }
