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
		back, err := decodeOne(got[len("prefix"):])
		if ot.OrderID != "" {
			require.NoError(t, err)
			assert.Equal(t, ot, back)
		}
	}
}

func TestDecodeTaskPlainAndEscaped(t *testing.T) {
	for _, ot := range []OrderTask{
		{OrderID: "42-06h051n2p8v751m9hwfs1nee", SKU: 42, User: "alice", Qty: 1, PriceCents: 99900, CreatedMS: 1795000000000},
		{OrderID: "1-x", SKU: 18446744073709551615, User: "bob@example.com", Qty: 1000, PriceCents: -1, CreatedMS: -5, RequestID: "c0ffee:01", Fence: 7},
		{OrderID: "o", SKU: 1, User: "u<&>", Qty: 1, RequestID: `quote"back\`, Fence: -3},
		{OrderID: "é", SKU: 1, User: "名", Qty: 1, RequestID: "\u2028"},
	} {
		got, err := DecodeOrders(ot.appendJSON(nil))
		require.NoError(t, err)
		assert.Equal(t, []OrderTask{ot}, got)
	}
	_, err := DecodeOrders([]byte(`{"o":"1-x","s":1,"u":"a","q":0,"p":1,"c":1}`))
	assert.Error(t, err, "qty 0 is incomplete")
	_, err = DecodeOrders([]byte(`{"o":"1-x","s":01,"u":"a","q":1,"p":1,"c":1}`))
	assert.Error(t, err, "a leading zero is not JSON")
}

func TestDecodeOrdersOfABatch(t *testing.T) {
	a := OrderTask{OrderID: "42-a", SKU: 42, User: "alice", Qty: 1, PriceCents: 99900, CreatedMS: 1795000000000, Fence: 3}
	b := OrderTask{OrderID: "42-b", SKU: 42, User: "bob", Qty: 2, PriceCents: 5, CreatedMS: 1795000000001, RequestID: "r1"}
	esc := OrderTask{OrderID: "42-c", SKU: 42, User: "名", Qty: 1}
	plain := "[" + string(a.appendJSON(nil)) + "," + string(b.appendJSON(nil)) + "]"
	got, err := DecodeOrders([]byte(plain))
	require.NoError(t, err)
	assert.Equal(t, []OrderTask{a, b}, got)

	mixed := "[" + string(a.appendJSON(nil)) + "," + string(esc.appendJSON(nil)) + "]"
	got, err = DecodeOrders([]byte(mixed))
	require.NoError(t, err)
	assert.Equal(t, []OrderTask{a, esc}, got, "an escaped id takes the slow path with the same result")

	bad := "[" + string(a.appendJSON(nil)) + `,{"o":"42-d","s":42,"u":"dave","q":0,"p":1,"c":1},` + string(b.appendJSON(nil)) + "]"
	got, err = DecodeOrders([]byte(bad))
	require.Error(t, err, "the incomplete order is named")
	assert.Contains(t, err.Error(), "42-d")
	assert.Equal(t, []OrderTask{a, b}, got, "its neighbours still decode")

	for _, junk := range []string{"", "[", "[]x", "nope", `[{"o":"1-x"`} {
		got, err = DecodeOrders([]byte(junk))
		assert.Error(t, err, junk)
		assert.Empty(t, got, junk)
	}
}

// FuzzDecodeOrders: whatever the fast path reads, json.Unmarshal reads the
// same.
func FuzzDecodeOrders(f *testing.F) {
	for _, b := range []string{
		`{"o":"42-06h051n2p8v751m9hwfs1nee","s":42,"u":"alice","q":1,"p":99900,"c":1795000000000}`,
		`{"o":"1-x","s":18446744073709551615,"u":"b","q":1000,"p":-1,"c":-5,"r":"c0ffee:01","f":7}`,
		`{"o":"1-x","s":18446744073709551616,"u":"b","q":1,"p":1,"c":1}`,
		`{"o":"1-x","s":1,"u":"b","q":99999999999999999999,"p":1,"c":1}`,
		`{"o":"1-x","s":1,"u":"b","q":-0,"p":1,"c":1,"f":0}`, `{"o":"","s":0,"u":"","q":0,"p":0,"c":0,"r":""}`,
		`{"o":"1-x","s":1,"u":"b","q":1,"p":1,"c":1}x`, `{"s":1,"o":"1-x","u":"b","q":1,"p":1,"c":1}`,
	} {
		f.Add([]byte("[" + b + "]"))
		f.Add([]byte("[" + b + "," + b + "]"))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := parsePlainBatch(b)
		if !ok {
			return
		}
		var slow []OrderTask
		require.NoError(t, json.Unmarshal(b, &slow), "fast path read %q", b)
		assert.Equal(t, slow, fast, "%q", b)
	})
}

// BenchmarkDecodeOrders: DecodeOrders against json.Unmarshal of the same
// payload, a batch of 16 orders.
func BenchmarkDecodeOrders(b *testing.B) {
	payload := []byte("[")
	for i := range 16 {
		if i > 0 {
			payload = append(payload, ',')
		}
		payload = OrderTask{OrderID: "42-06h051n2p8v751m9hwfs1nee", SKU: 42, User: "user-123456", Qty: 1,
			PriceCents: 99900, CreatedMS: 1795000000000, Fence: 12}.appendJSON(payload)
	}
	payload = append(payload, ']')
	b.Run("DecodeOrders", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeOrders(payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var t []OrderTask
			if err := json.Unmarshal(payload, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
}
