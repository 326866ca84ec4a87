package order

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCleanReason(t *testing.T) {
	for in, want := range map[string]string{
		"duplicate purchase":           "duplicate purchase",
		"  card reported stolen \n":    "card reported stolen",
		"line one\nline two\tend":      "line one\nline two\tend",
		strings.Repeat("é", 500):       strings.Repeat("é", 500),
		" " + strings.Repeat("x", 500): strings.Repeat("x", 500),
	} {
		got, err := CleanReason(in)
		require.NoError(t, err, "%q", in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"", "  \t\n ", strings.Repeat("é", 501), "a\x00b", "a\x1bb", "a\u0085b"} {
		_, err := CleanReason(bad)
		assert.True(t, errors.Is(err, ErrInvalid), "%q: %v", bad, err)
	}
}

func TestSupportQueryValidate(t *testing.T) {
	for _, ok := range []SupportQuery{
		{}, {SKU: 1}, {User: "alice"}, {Statuses: []string{StatusPaid, StatusCancelled}},
		{SKU: 42, Statuses: []string{StatusQueued}}, {SKU: 42, User: "bob", Statuses: sqlStatuses},
	} {
		assert.NoError(t, ok.Validate(), "%+v", ok)
	}
	for _, bad := range []SupportQuery{
		{SKU: 1 << 63}, {User: "a b"}, {Statuses: []string{""}}, {Statuses: []string{"PAID"}},
		{Statuses: []string{StatusQueued}}, {User: "alice", Statuses: []string{StatusPaid, StatusQueued}},
	} {
		assert.True(t, errors.Is(bad.Validate(), ErrInvalid), "%+v", bad)
	}
}

// inSQL names each status asked for once, in a fixed order; queued orders
// are never in SQL.
func TestSupportQueryStatusesInSQL(t *testing.T) {
	assert.Equal(t, sqlStatuses, SupportQuery{}.inSQL())
	assert.Equal(t, []string{StatusPaid, StatusCancelled},
		SupportQuery{Statuses: []string{StatusCancelled, StatusPaid, StatusPaid}}.inSQL())
	assert.Empty(t, SupportQuery{SKU: 1, Statuses: []string{StatusQueued}}.inSQL())
}
