package httpapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParsePlaceFast: whatever the fast path accepts, decodeStrict accepts
// with the same result.
func FuzzParsePlaceFast(f *testing.F) {
	for _, b := range []string{
		`{"sku_id":1,"qty":1}`, ` { "qty" : 2 , "sku_id" : 42 , "request_id" : "c0ffee-01" } `, `{}`,
		`{"sku_id":18446744073709551615,"qty":1}`, `{"sku_id":-1,"qty":1}`, `{"sku_id":1,"qty":-0}`,
		`{"sku_id":01,"qty":1}`, `{"sku_id":1.0,"qty":1}`, `{"sku_id":1e3,"qty":1}`, `{"SKU_ID":1}`,
		`{"sku_id":1,"sku_id":2}`, `{"sku_id":1,"qty":1,"extra":true}`, `{"sku_id":1,"qty":1}{}`,
		`{"request_id":"a\u0062"}`, `{"request_id":"é"}`, `{"request_id":null}`, `{"sku_id":1,}`,
		"{\"sku_id\":1,\"qty\":1}\n", `{"sku_id":1 "qty":1}`, `[1]`, ``, `{"qty":999999999999999999}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast placeRequest
		if !parsePlaceFast(body, &fast) {
			return
		}
		var strict placeRequest
		require.NoError(t, decodeStrict(body, &strict), "fast path accepted %q", body)
		assert.Equal(t, strict, fast, "%q", body)
	})
}

func TestParsePlaceFastShapes(t *testing.T) {
	for body, want := range map[string]bool{
		`{"sku_id":1,"qty":1}`: true, ` { "qty" : 2 , "sku_id" : 42 , "request_id" : "c0ffee-01" } `: true, `{}`: true,
		`{"sku_id":1,"qty":-3}`: true,
		`{"sku_id":-1}`:         false, `{"sku_id":01}`: false, `{"sku_id":1.5}`: false, `{"SKU_ID":1}`: false,
		`{"sku_id":1,"sku_id":2}`: false, `{"x":1}`: false, `{"sku_id":1}{}`: false, `{"request_id":"a\"b"}`: false,
		`{"sku_id":1234567890123456789}`: false, `{"sku_id":1,}`: false, `{"sku_id":null}`: false,
	} {
		var req placeRequest
		assert.Equal(t, want, parsePlaceFast([]byte(body), &req), body)
	}
}
