package seedfile

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/catalog"
)

// seedYAML and seedCSV start the fuzzers at files close to the edges: every
// field, numbers that are fractions, huge, negative zero, not finite, and
// the shapes a careless file takes.
var seedYAML = []string{
	"- {id: 1, name: Phone, price_cents: 99900, stock: 10, per_user_limit: 1, starts_at: 2026-11-11T00:00:00Z, ends_at: 2026-11-11T01:00:00Z}\n",
	"- {id: 2, buckets: 4, hidden: true, limit_counts_cancelled: false}\n",
	"- {id: 3, waiting_room: {opens_at: 2026-11-10T23:30:00Z, mode: fifo, admit_per_second: 50, pass_ttl: 90s, overbook: 1.5}}\n",
	"skus: [{id: 4}]\ndrops: [{name: Runner, skus: [4, 5], per_user_limit: 1, waiting_room: {opens_at: 2026-11-10T23:30:00Z}}]\n",
	"- {price_cents: 0.99, stock: 10.9, per_user_limit: 1.7}\n",
	"- {stock: 9223372036854775807, price_cents: -9223372036854775808, id: 18446744073709551615}\n",
	"- {stock: 9223372036854775808, buckets: 2147483648}\n",
	"- {waiting_room: {opens_at: 2026-11-10T23:30:00Z, overbook: .nan}}\n",
	"- {waiting_room: {opens_at: 2026-11-10T23:30:00Z, overbook: -.inf, pass_ttl: -5s}}\n",
	"- {waiting_room: {opens_at: 2026-11-10T23:30:00Z, overbook: -0.0, admit_per_second: -0}}\n",
	"- {starts_at: 2026-11-11T00:00:20.0001Z, ends_at: 2026-11-11T00:00:20.0004Z}\n",
	"- &a {id: 1, name: x}\n- {<<: *a, id: 2}\n- *a\n",
	"- {id: 1}\n---\n- {id: 2}\n", "- {id: 1}\n---\n{{{\n", "id: 1\n", "~\n", "", "- [1]\n", "- {id: 1, id: 2}\n",
}

var seedCSV = []string{
	strings.Join(Columns, ",") + "\n1,Phone,99900,10,1,2026-11-11T00:00:00Z,2026-11-11T01:00:00Z,1,true,2026-11-10T23:30:00Z,fifo,50,90s,1.5,12\n",
	"id,stock,price_cents\n1,10.9,0.99\n", "id,stock\n1,9223372036854775808\n", "id\n-1\n",
	"room_opens_at,room_overbook\n2026-11-11T00:00:00Z,NaN\n", "room_opens_at,room_overbook\n2026-11-11T00:00:00Z,-0\n",
	"room_opens_at,room_overbook,room_pass_ttl\n2026-11-11T00:00:00Z,1e400,-1h\n",
	"\uFEFFid,name\n1,\"a,b\"\n", "id,name\n1\n", "id,name\n1,a\"b\n", "", "id,colour\n1,red\n",
}

func FuzzReadYAML(f *testing.F) {
	for _, s := range seedYAML {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) { checkRead(t, text, YAML) })
}

func FuzzReadCSV(f *testing.F) {
	for _, s := range seedCSV {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) { checkRead(t, text, CSV) })
}

// checkRead reads text as a seed file of form f: a refusal names a line
// (or says the file is empty), and every row read names its line and, once
// it passes the SKU's checks, holds only values the SKU may keep.
func checkRead(t *testing.T, text string, f Format) {
	file, err := Read(strings.NewReader(text), f)
	if err != nil {
		if msg := err.Error(); !strings.Contains(msg, "line ") && !strings.HasPrefix(msg, "the file is empty") {
			t.Fatalf("%q: an error that names no line: %v", text, err)
		}
		return
	}
	for _, d := range file.Drops {
		if d.Line < 1 || len(d.Spec.SKUs) > catalog.MaxDropSKUs {
			t.Fatalf("%q: a drop of no line or too many skus: %+v", text, d)
		}
		_ = d.Spec.Validate()
	}
	rows := file.Rows
	start := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	for _, r := range rows {
		if r.Line < 1 {
			t.Fatalf("%q: a row of no line: %+v", text, r)
		}
		s := r.Spec
		if s.Validate() != nil {
			continue
		}
		switch {
		case s.ID > catalog.MaxID:
			t.Fatalf("%q: id %d", text, s.ID)
		case s.PriceCents != nil && (*s.PriceCents < 0 || *s.PriceCents > catalog.MaxPriceCents):
			t.Fatalf("%q: price_cents %d", text, *s.PriceCents)
		case s.Stock != nil && (*s.Stock < 0 || *s.Stock > catalog.MaxStock):
			t.Fatalf("%q: stock %d", text, *s.Stock)
		case s.PerUserLimit != nil && (*s.PerUserLimit < 1 || *s.PerUserLimit > catalog.MaxPerUserLimit):
			t.Fatalf("%q: per_user_limit %d", text, *s.PerUserLimit)
		case s.StartsAt != nil && s.EndsAt != nil && !s.EndsAt.After(*s.StartsAt):
			t.Fatalf("%q: a window of no length", text)
		}
		if room := s.WaitingRoom; room != nil {
			if o := room.Overbook; math.IsNaN(o) || o != 0 && (o < 1 || o > catalog.MaxOverbook) {
				t.Fatalf("%q: overbook %v", text, o)
			}
		}
		if sku, err := s.New(start); err == nil && (math.IsNaN(sku.Room.Overbook) || !sku.EndsAt.After(sku.StartsAt)) {
			t.Fatalf("%q: a SKU it may not keep: %+v", text, sku)
		}
	}
}
