package seedfile

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
)

func TestReadCSVAndYAMLGiveTheSameSKUs(t *testing.T) {
	fromCSV, err := Read(strings.NewReader("id,name,stock,starts_at\n1,Phone X Pro,,\n2,,500,2026-11-11T00:00:00Z\n"), CSV)
	require.NoError(t, err)
	fromYAML, err := Read(strings.NewReader("- {id: 1, name: Phone X Pro}\n- {id: 2, stock: 500, starts_at: 2026-11-11T00:00:00Z}\n"), YAML)
	require.NoError(t, err)
	require.Len(t, fromCSV, 2)
	assert.Equal(t, fromYAML, fromCSV)
	assert.Nil(t, fromCSV[0].Stock, "an empty cell is not given")
	assert.Equal(t, int64(500), *fromCSV[1].Stock)
	assert.Nil(t, fromCSV[1].Name)
}

func TestReadRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		f    Format
		err  string
	}{
		"unknown column":   {"id,colour\n1,red\n", CSV, `unknown column "colour"`},
		"column twice":     {"id,id\n1,1\n", CSV, `column "id" twice`},
		"bad number":       {"id,stock\n1,many\n", CSV, "csv line 2: stock"},
		"bad time":         {"id,starts_at\n1,tomorrow\n", CSV, "starts_at: want RFC 3339"},
		"room without":     {"id,room_mode\n1,fifo\n", CSV, "room_mode: a waiting room needs room_opens_at"},
		"empty csv":        {"", CSV, "csv: empty file"},
		"empty yaml":       {"", YAML, "yaml: empty file"},
		"unknown yaml key": {"- {id: 1, colour: red}\n", YAML, "colour"},
	} {
		_, err := Read(strings.NewReader(tc.text), tc.f)
		assert.ErrorContains(t, err, tc.err, name)
	}
}

func TestFormatOf(t *testing.T) {
	assert.Equal(t, CSV, FormatOf("skus.CSV"))
	assert.Equal(t, YAML, FormatOf("skus.yaml"))
	assert.Equal(t, YAML, FormatOf("skus"))
}

// known is a catalog of the SKUs with the ids it holds.
type known map[uint64]bool

func (k known) Get(_ context.Context, id uint64) (*catalog.SKU, error) {
	if k[id] {
		return &catalog.SKU{ID: id}, nil
	}
	return nil, catalog.ErrNotFound
}

func TestCheckNewNamesWhatANewSKUMisses(t *testing.T) {
	name := "Gift"
	specs := []catalog.Spec{{ID: 1}, {ID: 2, Name: &name}}
	err := CheckNew(t.Context(), known{1: true}, specs, false)
	require.ErrorIs(t, err, catalog.ErrInvalid)
	assert.EqualError(t, err, `sku 2 (id 2, "Gift") is new and needs price_cents, stock, per_user_limit, starts_at, ends_at: `+
		"a field left out is not 0 (give price_cents 0 for a free sale)")
	assert.NoError(t, CheckNew(t.Context(), known{1: true, 2: true}, specs, false), "both exist: updates")

	err = NeedsAll(0, catalog.Spec{Name: &name}, true)
	assert.ErrorContains(t, err, "price_cents (--price-cents)")
}
