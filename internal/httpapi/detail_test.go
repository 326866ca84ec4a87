package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
)

// detail returns the detail of an error answer.
func detail(t *testing.T, body []byte) string {
	t.Helper()
	var e struct{ Detail string }
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	return e.Detail
}

// A refusal's detail says what the client must send instead, in its own
// terms, and arrives as written: no HTML escapes of < and >.
func TestDetailsSayWhatToSendInstead(t *testing.T) {
	h := testAPI(t, nil)
	buy := func(body, user string) *httptest.ResponseRecorder {
		return send(h, "POST", "/api/v1/orders", []byte(body), map[string]string{"X-User-ID": user})
	}
	for _, tc := range []struct {
		body, user string
		status     int
		want       string
	}{
		{`{"sku_id":"1","qty":1}`, "alice", 400, "field sku_id must be an integer from 1 to 9223372036854775807"},
		{`{"sku_id":-1,"qty":1}`, "alice", 400, "field sku_id must be an integer from 1 to 9223372036854775807"},
		{`{"sku_id":1,"qty":"1"}`, "alice", 400, "field qty must be an integer from 1 to 1000"},
		{`{"sku_id":1,"qty":1}`, "a b", 401, "X-User-ID must be 1 to 64 letters, digits or - _ . : @"},
		{`{"sku_id":1,"qty":1}`, "", 401, "identify the shopper with the X-User-ID header"},
	} {
		w := buy(tc.body, tc.user)
		assert.Equal(t, tc.status, w.Code, "%s %q", tc.body, tc.user)
		assert.Equal(t, tc.want, detail(t, w.Body.Bytes()), "%s %q", tc.body, tc.user)
	}

	jh, _ := jwtAPI(t)
	w := send(jh, "GET", "/api/v1/orders", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Contains(t, w.Body.String(), "Bearer <JWT>", "< and > as written")
	assert.False(t, strings.Contains(w.Body.String(), `\u003c`), w.Body.String())
}

// The kind tags of a buy's body name the ranges the order service checks.
func TestPlaceRequestKinds(t *testing.T) {
	sku, _ := fieldKind(reflect.TypeFor[placeRequest](), "sku_id")
	assert.Equal(t, "an integer from 1 to "+strconv.FormatUint(catalog.MaxID, 10), sku)
	qty, _ := fieldKind(reflect.TypeFor[placeRequest](), "qty")
	assert.Equal(t, "an integer from 1 to "+strconv.Itoa(order.MaxQty), qty)
}
