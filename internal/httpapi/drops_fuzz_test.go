package httpapi

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/sale"
)

// checkedDrops makes every drop it is asked for that is valid.
type checkedDrops struct{}

func (checkedDrops) Drop(context.Context, uint64) (*sale.DropView, error) {
	return nil, catalog.ErrDropNotFound
}
func (checkedDrops) IsDrop(context.Context, uint64) error { return catalog.ErrDropNotFound }
func (checkedDrops) CreateDrop(_ context.Context, spec catalog.DropSpec) (*sale.DropView, bool, error) {
	if err := spec.Validate(); err != nil {
		return nil, false, err
	}
	return &sale.DropView{ID: spec.SKUs[0], Name: spec.Name, PerUserLimit: spec.PerUserLimit, State: catalog.Upcoming,
		SKUs: []sale.SKUView{}, WaitingRoom: &sale.RoomView{Mode: catalog.RoomRandom}}, true, nil
}

// A drop's body is refused 4xx, never 5xx, unless it decodes to a drop
// whose every field is in range: a name of 1 to 200 characters, 1 to 50
// distinct SKU ids, a limit from 1 to 1000 and a valid room.
func FuzzDropRequest(f *testing.F) {
	for _, b := range []string{
		`{"name":"Runner","skus":[1,2],"per_user_limit":1,"waiting_room":{"opens_at":"2026-11-10T23:30:00Z"}}`,
		`{"name":"Runner","skus":[2,1,2],"per_user_limit":1,"waiting_room":{"opens_at":"2026-11-10T23:30:00Z"}}`,
		`{"name":" ","skus":[1],"per_user_limit":1,"waiting_room":{"opens_at":"2026-11-10T23:30:00Z"}}`,
		`{"name":"x","skus":[0],"per_user_limit":1,"waiting_room":{"opens_at":"2026-11-10T23:30:00Z"}}`,
		`{"name":"x","skus":[9223372036854775808],"per_user_limit":1,"waiting_room":{"opens_at":"2026-11-10T23:30:00Z"}}`,
		`{"name":"x","skus":[1],"per_user_limit":1001,"waiting_room":{"opens_at":"2026-11-10T23:30:00Z"}}`,
		`{"name":"x","skus":[1],"per_user_limit":1,"waiting_room":{"opens_at":"2026-11-10T23:30:00Z","overbook":0.5}}`,
		`{"name":"x","skus":[1],"per_user_limit":1}`, `{"name":"x","skus":"1","per_user_limit":1}`, `{"skus":null}`,
	} {
		f.Add([]byte(b))
	}
	for _, b := range hostile {
		f.Add([]byte(b))
	}
	h := testAPI(f, func(d *Deps) { d.Drops = checkedDrops{} })
	f.Fuzz(func(t *testing.T, body []byte) {
		var spec catalog.DropSpec
		err := decodeStrict(body, &spec)
		if err == nil {
			err = spec.Validate()
		}
		if err != nil {
			mustBe4xx(t, err, body)
		} else {
			n := utf8.RuneCountInString(spec.Name)
			switch {
			case n < 1 || n > catalog.MaxNameLen, len(spec.SKUs) < 1 || len(spec.SKUs) > catalog.MaxDropSKUs,
				!slices.IsSorted(spec.SKUs), len(slices.Compact(slices.Clone(spec.SKUs))) != len(spec.SKUs),
				spec.SKUs[0] < 1 || spec.SKUs[len(spec.SKUs)-1] > catalog.MaxID,
				spec.PerUserLimit < 1 || spec.PerUserLimit > catalog.MaxPerUserLimit, spec.WaitingRoom == nil:
				t.Fatalf("%q: accepted %+v", body, spec)
			}
		}
		w := send(h, http.MethodPost, "/admin/drops", body, map[string]string{"Authorization": "Bearer " + testAdminToken})
		switch {
		case w.Code >= 500:
			t.Fatalf("POST /admin/drops %q: %d %s", body, w.Code, w.Body)
		case (err == nil) != (w.Code == http.StatusCreated):
			t.Fatalf("POST /admin/drops %q: %d %s, decoded with %v", body, w.Code, w.Body, err)
		}
	})
}
