package cli

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/catalog"
)

func seedCmd(e *env) *cobra.Command {
	var spec catalog.Spec
	var file, starts, ends string
	cmd := &cobra.Command{
		Use:   "seed",
		Short: "Seed sale inventory (SKUs) from flags or a YAML/CSV file",
		Long: `seed writes SKUs to MySQL and warms their stock in Redis. Give one SKU with
flags, or many with --file: a YAML list of objects, or a CSV file with the
header id,name,price_cents,stock,per_user_limit,starts_at,ends_at and
optionally buckets. Times are RFC 3339. A SKU with an id that exists is
updated (name, price, limit, window and stock_total, never below what is
sold), so re-running a seed file changes nothing.

buckets (--buckets, 1 to 64) splits a SKU's stock in Redis over that many
hash tags, so that one hot SKU's buys spread over as many Redis Cluster
shards (see docs/SCALING.md). It is fixed when the SKU is created: left out
(or 0, or an empty CSV cell), a new SKU gets 1 and an existing one keeps its
count; another count for an existing SKU is refused and nothing is written.`,
		Example: `  seckill seed --id 1 --name "Phone X" --price-cents 99900 --stock 10 --per-user-limit 1 \
      --starts-at 2026-11-11T00:00:00Z --ends-at 2026-11-11T01:00:00Z
  seckill seed --id 2 --name "Hot Phone" --price-cents 99900 --stock 100000 --buckets 16
  seckill seed --file skus.yaml
  seckill seed --file skus.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var specs []catalog.Spec
			if file != "" {
				if cmd.Flags().Changed("name") || cmd.Flags().Changed("stock") || cmd.Flags().Changed("buckets") {
					return usageError{errors.New("give either --file or the SKU flags, not both")}
				}
				var err error
				if specs, err = readSpecs(file); err != nil {
					return usageError{err}
				}
			} else {
				var err error
				if spec.StartsAt, err = parseTime("--starts-at", starts); err != nil {
					return usageError{err}
				}
				if spec.EndsAt, err = parseTime("--ends-at", ends); err != nil {
					return usageError{err}
				}
				if spec.StartsAt.IsZero() {
					spec.StartsAt = time.Now().UTC().Truncate(time.Second)
				}
				if spec.EndsAt.IsZero() {
					spec.EndsAt = spec.StartsAt.Add(time.Hour)
				}
				specs = []catalog.Spec{spec}
			}
			for i := range specs {
				if err := specs[i].Validate(); err != nil {
					return usageError{fmt.Errorf("sku %d (%q): %w", i+1, specs[i].Name, err)}
				}
			}
			cfg, log, err := e.load()
			if err != nil {
				return err
			}
			a, err := app.Open(cmd.Context(), cfg, log, cfg.MySQL.MigrateOnStart)
			if err != nil {
				return err
			}
			defer a.Close()
			enc := json.NewEncoder(e.stdout)
			for _, s := range specs {
				v, created, err := a.Sales.UpsertSKU(cmd.Context(), s)
				if err != nil {
					return fmt.Errorf("seed %q: %w", s.Name, err)
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
	f.Uint64Var(&spec.ID, "id", 0, "SKU id, 1 to 9223372036854775807 (optional; makes re-seeding idempotent)")
	f.StringVar(&spec.Name, "name", "", "SKU name")
	f.Int64Var(&spec.PriceCents, "price-cents", 0, "price in cents")
	f.Int64Var(&spec.Stock, "stock", 0, "units on sale")
	f.IntVar(&spec.PerUserLimit, "per-user-limit", 1, "most units one shopper may buy")
	f.IntVar(&spec.Buckets, "buckets", 0, "Redis hash tags the stock is split over, 1 to 64; fixed at creation (left out: 1 when new, kept when the SKU exists)")
	f.StringVar(&starts, "starts-at", "", "sale start, RFC 3339 (default now)")
	f.StringVar(&ends, "ends-at", "", "sale end, RFC 3339 (default 1h after the start)")
	return cmd
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

// readSpecs reads SKUs from a YAML list or a CSV file with a header row.
// A SKU without buckets has Buckets 0 (not given).
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
		col[strings.TrimSpace(strings.ToLower(h))] = i
	}
	for _, need := range []string{"name", "price_cents", "stock", "per_user_limit", "starts_at", "ends_at"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("csv: missing column %q", need)
		}
	}
	var specs []catalog.Spec
	for n, row := range rows[1:] {
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(row) {
				return strings.TrimSpace(row[i])
			}
			return ""
		}
		var s catalog.Spec
		var errs []error
		num := func(name string, bits int) int64 {
			v, err := strconv.ParseInt(get(name), 10, bits)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			return v
		}
		if id := get("id"); id != "" {
			v, err := strconv.ParseUint(id, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("id: %w", err))
			}
			s.ID = v
		}
		s.Name = get("name")
		s.PriceCents = num("price_cents", 64)
		s.Stock = num("stock", 64)
		s.PerUserLimit = int(num("per_user_limit", 32))
		if b := get("buckets"); b != "" {
			s.Buckets = int(num("buckets", 32))
		}
		var err error
		if s.StartsAt, err = parseTime("starts_at", get("starts_at")); err != nil {
			errs = append(errs, err)
		}
		if s.EndsAt, err = parseTime("ends_at", get("ends_at")); err != nil {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return nil, fmt.Errorf("csv line %d: %w", n+2, errors.Join(errs...))
		}
		specs = append(specs, s)
	}
	return specs, nil
}
