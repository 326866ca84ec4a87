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

func TestDecodeTaskPlainAndEscaped(t *testing.T) {
	for _, ot := range []OrderTask{
		{OrderID: "42-06h051n2p8v751m9hwfs1nee", SKU: 42, User: "alice", Qty: 1, PriceCents: 99900, CreatedMS: 1795000000000},
		{OrderID: "1-x", SKU: 18446744073709551615, User: "bob@example.com", Qty: 1000, PriceCents: -1, CreatedMS: -5, RequestID: "c0ffee:01", Fence: 7},
		{OrderID: "o", SKU: 1, User: "u<&>", Qty: 1, RequestID: `quote"back\`, Fence: -3},
		{OrderID: "é", SKU: 1, User: "名", Qty: 1, RequestID: "\u2028"},
	} {
		got, err := DecodeTask(ot.appendJSON(nil))
		require.NoError(t, err)
		assert.Equal(t, ot, got)
	}
	_, err := DecodeTask([]byte(`{"o":"1-x","s":1,"u":"a","q":0,"p":1,"c":1}`))
	assert.Error(t, err, "qty 0 is incomplete")
	_, err = DecodeTask([]byte(`{"o":"1-x","s":01,"u":"a","q":1,"p":1,"c":1}`))
	assert.Error(t, err, "a leading zero is not JSON")
}

// FuzzDecodeTask: whatever the fast path reads, json.Unmarshal reads the same.
func FuzzDecodeTask(f *testing.F) {
	for _, b := range []string{
		`{"o":"42-06h051n2p8v751m9hwfs1nee","s":42,"u":"alice","q":1,"p":99900,"c":1795000000000}`,
		`{"o":"1-x","s":18446744073709551615,"u":"b","q":1000,"p":-1,"c":-5,"r":"c0ffee:01","f":7}`,
		`{"o":"1-x","s":18446744073709551616,"u":"b","q":1,"p":1,"c":1}`,
		`{"o":"1-x","s":1,"u":"b","q":99999999999999999999,"p":1,"c":1}`,
		`{"o":"1-x","s":1,"u":"b","q":-0,"p":1,"c":1,"f":0}`, `{"o":"","s":0,"u":"","q":0,"p":0,"c":0,"r":""}`,
		`{"o":"1-x","s":1,"u":"b","q":1,"p":1,"c":1}x`, `{"s":1,"o":"1-x","u":"b","q":1,"p":1,"c":1}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast OrderTask
		if !fast.parsePlain(b) {
			return
		}
		var slow OrderTask
		require.NoError(t, json.Unmarshal(b, &slow), "fast path read %q", b)
		assert.Equal(t, slow, fast, "%q", b)
	})
}

// BenchmarkDecodeTask: DecodeTask against json.Unmarshal of the same payload.
func BenchmarkDecodeTask(b *testing.B) {
	payload := OrderTask{OrderID: "42-06h051n2p8v751m9hwfs1nee", SKU: 42, User: "user-123456", Qty: 1,
		PriceCents: 99900, CreatedMS: 1795000000000, Fence: 12}.appendJSON(nil)
	b.Run("DecodeTask", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeTask(payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var t OrderTask
			if err := json.Unmarshal(payload, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
}
