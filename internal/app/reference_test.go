package app

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/orderid"
)

// providerReference is what every provider takes as its order number:
// WeChat Pay's 6 to 32 of [0-9A-Za-z_-|*] and Alipay's letters, digits and
// underscores both hold.
var providerReference = regexp.MustCompile(`^[0-9A-Za-z]{6,32}$`)

// An order's payment reference: the same in every view and on every call,
// stored with the order, found by the admin list, and enough for a
// notification to find its order.
func TestAPaymentReferenceFindsItsOrder(t *testing.T) {
	s := startPayments(t, saleOpts{})
	// A bucketed SKU's order ids hold a dot, which WeChat Pay refuses.
	sku := s.seedBuckets(10, 2, 4)
	id := s.order(0, sku, "alice")
	queued := s.do(0, "GET", "/api/v1/orders/"+id, "alice", nil)
	ref := queued.Str("payment_reference")
	assert.Regexp(t, providerReference, ref, "queued: %s", queued.Raw)
	o := s.waitStatus("alice", id, order.StatusPendingPayment)
	assert.Equal(t, ref, o.Str("payment_reference"), "the same once in SQL")
	co := s.do(0, "POST", "/api/v1/orders/"+id+"/pay", "alice", nil)
	require.Equal(t, http.StatusOK, co.Status, co.Raw)
	assert.Equal(t, ref, co.Str("payment_reference"))
	var row order.Order
	require.NoError(t, s.apps[0].DB.Take(&row, "order_id = ?", id).Error)
	require.NotNil(t, row.PaymentReference, "stored with the order")
	assert.Equal(t, ref, *row.PaymentReference)

	list := s.do(0, "GET", "/admin/orders?payment_reference="+ref, "", nil)
	require.Equal(t, http.StatusOK, list.Status, list.Raw)
	items, _ := list.Body["items"].([]any)
	require.Len(t, items, 1, list.Raw)
	assert.Equal(t, id, items[0].(map[string]any)["order_id"])
	assert.Equal(t, ref, items[0].(map[string]any)["payment_reference"])
	for _, q := range []string{"&user_id=bob", "&status=paid", fmt.Sprintf("&sku_id=%d", sku+1)} {
		r := s.do(0, "GET", "/admin/orders?payment_reference="+ref+q, "", nil)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		assert.Empty(t, r.Body["items"], "%s: the other filters still apply", q)
	}
	other, _ := orderid.Reference(strings.Replace(id, "-", "-z", 1)[:len(id)])
	r := s.do(0, "GET", "/admin/orders?payment_reference="+other, "", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Empty(t, r.Body["items"], "no such order")
	for _, bad := range []string{"", "pay_" + id, ref + "0", strings.ToLower(ref[:31]) + "-"} {
		r := s.do(0, "GET", "/admin/orders?payment_reference="+bad, "", nil)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%q: %s", bad, r.Raw)
	}

	// A notification naming the order by its reference alone pays it.
	p := payment{webhookID: "ref_1", paymentID: "pi_ref_1", reference: ref, amount: 99900, currency: "EUR"}
	r = s.notify(0, p)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, order.PaymentApplied, r.Str("status"))
	assert.Equal(t, id, r.Str("order_id"))
	assert.Equal(t, order.StatusPaid, s.do(0, "GET", "/api/v1/orders/"+id, "alice", nil).Str("status"))
	r = s.notify(0, p)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	assert.Equal(t, true, r.Body["replay"])

	// A reference that is no order's, or that names another order than
	// the order id beside it: nothing is written.
	r = s.notify(0, payment{webhookID: "ref_2", paymentID: "pi_ref_2", reference: other, amount: 99900, currency: "EUR"})
	assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
	r = s.notify(0, payment{webhookID: "ref_3", paymentID: "pi_ref_3", reference: "pay_" + id, amount: 99900, currency: "EUR"})
	assert.Equal(t, http.StatusNotFound, r.Status, r.Raw)
	second := s.order(0, sku, "bob")
	s.waitStatus("bob", second, order.StatusPendingPayment)
	r = s.notify(0, payment{webhookID: "ref_4", paymentID: "pi_ref_4", orderID: second, reference: ref, amount: 99900, currency: "EUR"})
	assert.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
	assert.Len(t, s.payments(id), 1)
	assert.Empty(t, s.payments(second))
}
