package stock

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOrderTaskAppendJSONMatchesMarshal(t *testing.T) {
	for _, ot := range []OrderTask{
		{OrderID: "42-06h051n2p8v751m9hwfs1nee", SKU: 42, User: "alice", Qty: 1, PriceCents: 99900, CreatedMS: 1795000000000},
		{OrderID: "1-x", SKU: 18446744073709551615, User: "bob@example.com", Qty: 1000, PriceCents: -1, CreatedMS: -5, RequestID: "c0ffee:01", Fence: 7},
		{OrderID: "o", SKU: 1, User: "u<&>", Qty: 1, RequestID: `quote"back\\`, Fence: -3},
		{OrderID: "é", SKU: 1, User: "名\x00\n", Qty: 1, RequestID: "\u2028 \xff"},
		{},
	} {
		want, err := json.Marshal(ot)
		require.NoError(t, err)
		got := ot.appendJSON([]byte("prefix"))
		assert.Equal(t, "prefix"+string(want), string(got))
		if strings.ContainsAny(ot.User, "<&\x00") {
			continue
		}
		back, err := DecodeTask(got[len("prefix"):])
		if ot.OrderID != "" {
			require.NoError(t, err)
			assert.Equal(t, ot, back)
		}
	}
}
