package app

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every list with a cursor answers 400 invalid_request to a cursor it did
// not give or cannot use, whatever the store behind it, and pages from the
// edges of what it can give: the last id, the first and the last millisecond
// SQL keeps.
func TestListsRefuseCursorsTheyCannotUse(t *testing.T) {
	for name, o := range map[string]saleOpts{"mysql": {}, "embedded": {embedded: true}} {
		t.Run(name, func(t *testing.T) {
			s := startSale(t, o)
			sku := s.seed(5, 1)
			id := s.order(0, sku, "alice")
			b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
			orderCursor := func(ms int64, id string) string { return b64("order:" + strconv.FormatInt(ms, 10) + ":" + id) }
			const lastMS = 253402300799999 // 9999-12-31T23:59:59.999Z
			byID := []string{"/api/v1/skus", "/admin/skus", "/admin/events", "/admin/payments", "/admin/events?status=dead"}
			byOrder := []string{"/api/v1/orders", "/admin/orders", "/admin/orders?sku_id=" + strconv.FormatUint(sku, 10)}

			bad := map[string][]string{}
			for _, p := range byID {
				bad[p] = []string{
					b64("sku:0"), b64("sku:9223372036854775808"), b64("sku:18446744073709551615"), b64("sku:+1"),
					b64("sku:1 "), b64("sku:01"), b64("order:1:" + id), b64("sku:1") + "=", noncanonical(b64("sku:1")),
				}
			}
			for _, p := range byOrder {
				bad[p] = []string{
					orderCursor(lastMS+1, id),       // past year 9999
					orderCursor(1<<62, id),          // far past it
					orderCursor(-1, id),             // before 1970
					orderCursor(1795400000000, "x"), // not an order id
					orderCursor(1795400000000, id+"  "),
					orderCursor(1795400000000, id+"\xff"),
					orderCursor(1795400000000, strings.ToUpper(id)),
					orderCursor(1795400000000, ""),
					b64("order:01795400000000:" + id), b64("order:1795400000000"), b64("sku:5"),
					noncanonical(orderCursor(1795400000000, id)),
				}
			}
			for path, cursors := range bad {
				for _, c := range cursors {
					r := s.do(0, "GET", withQuery(path, "cursor="+c), "alice", nil)
					assert.Equal(t, http.StatusBadRequest, r.Status, "%s cursor %q: %s", path, c, r.Raw)
					assert.Equal(t, "invalid_request", r.Str("error"), "%s cursor %q", path, c)
				}
			}

			good := map[string][]string{}
			for _, p := range byID {
				good[p] = []string{b64("sku:1"), b64("sku:9223372036854775807")}
			}
			for _, p := range byOrder {
				good[p] = []string{orderCursor(lastMS, id), orderCursor(0, id), orderCursor(1795400000000, id)}
			}
			for path, cursors := range good {
				for _, c := range cursors {
					r := s.do(0, "GET", withQuery(path, "cursor="+c), "alice", nil)
					assert.Equal(t, http.StatusOK, r.Status, "%s cursor %q: %s", path, c, r.Raw)
				}
			}
		})
	}
}

// noncanonical is the base64url text enc with its unused low bits set: it
// decodes, leniently, to the same bytes, but is not what an encoder writes.
func noncanonical(enc string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	if len(enc)%4 == 0 {
		panic("no unused bits in " + enc)
	}
	last := strings.IndexByte(alphabet, enc[len(enc)-1])
	return enc[:len(enc)-1] + string(alphabet[last|1])
}

// withQuery adds q to path's query.
func withQuery(path, q string) string {
	if strings.Contains(path, "?") {
		return path + "&" + q
	}
	return path + "?" + q
}
