package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/payment/notify"
)

// stubNotifications is a provider's verifier that says what it is told.
type stubNotifications struct {
	n   notify.Notification
	err error
}

func (s stubNotifications) Verify([]byte, http.Header) (notify.Notification, error) {
	return s.n, s.err
}

// recordingPayments applies every notice by answering err, and keeps the
// last notice.
type recordingPayments struct {
	stubPayments
	err  error
	last order.PaymentNotice
}

func (r *recordingPayments) ApplyPayment(ctx context.Context, n order.PaymentNotice) (*order.PaymentResult, error) {
	r.last = n
	if r.err != nil {
		return nil, r.err
	}
	return r.stubPayments.ApplyPayment(ctx, n)
}

var paid = notify.Notification{ID: "n1", PaymentID: "t1", Reference: "p4Xk2mQ9sT7vW1yZ", AmountCents: 8888, Currency: "CNY",
	State: "TRADE_SUCCESS", Paid: true}

// Each provider's answers: its own format, the status the error table
// decides.
func TestProviderAnswers(t *testing.T) {
	for _, tc := range []providerCase{
		{"paid", stubNotifications{n: paid}, nil, 0, ""},
		{"no payment", stubNotifications{n: notify.Notification{ID: "n1", State: "WAIT_BUYER_PAY"}}, nil, 0, ""},
		{"not signed", stubNotifications{err: fmt.Errorf("%w: sign is missing", notify.ErrSignature)}, nil, 401, "invalid_signature"},
		{"not decrypted", stubNotifications{err: fmt.Errorf("%w: x", notify.ErrUndecryptable)}, nil, 401, "undecryptable"},
		{"another merchant", stubNotifications{err: fmt.Errorf("%w: x", notify.ErrMerchant)}, nil, 422, "wrong_merchant"},
		{"malformed", stubNotifications{err: fmt.Errorf("%w: x", notify.ErrMalformed)}, nil, 400, "invalid_request"},
		{"mismatch", stubNotifications{n: paid}, order.ErrPaymentMismatch, 422, "payment_mismatch"},
		{"no such order", stubNotifications{n: paid}, order.ErrNotFound, 404, "not_found"},
		{"not yet in SQL", stubNotifications{n: paid}, order.ErrPaymentEarly, 503, "order_queued"},
		{"a store down", stubNotifications{n: paid}, errors.New("connection refused"), 500, "internal"},
	} {
		for _, provider := range []string{"alipay", "wechatpay"} {
			pay := &recordingPayments{err: tc.applied}
			h := rawAPI(t, func(d *Deps) {
				d.Payments = pay
				if provider == "alipay" {
					d.Alipay = tc.verify
				} else {
					d.WeChatPay = tc.verify
				}
			})
			w := send(h, http.MethodPost, "/webhooks/"+provider, []byte("x=1"), nil)
			name := provider + ": " + tc.name
			switch {
			case provider == "alipay" && tc.code == "":
				assert.Equal(t, http.StatusOK, w.Code, name)
				assert.Equal(t, "success", w.Body.String(), name)
			case provider == "alipay":
				assert.Equal(t, tc.status, w.Code, name)
				assert.Equal(t, "fail", w.Body.String(), name)
			case tc.code == "":
				assert.Equal(t, http.StatusNoContent, w.Code, name)
				assert.Empty(t, w.Body.String(), name)
			default:
				assert.Equal(t, tc.status, w.Code, name)
				assert.JSONEq(t, `{"code":"FAIL","message":"`+tc.code+`: `+toAPI(tc.err()).Detail+`"}`, w.Body.String(), name)
			}
			if tc.verify.err == nil && tc.verify.n.Paid {
				assert.Equal(t, order.PaymentNotice{WebhookID: "n1", PaymentID: "t1", PaymentReference: "p4Xk2mQ9sT7vW1yZ",
					AmountCents: 8888, Currency: "CNY"}, pay.last, name)
			} else {
				assert.Empty(t, pay.last, "%s: nothing reaches the store", name)
			}
		}
	}
}

type providerCase struct {
	name    string
	verify  stubNotifications
	applied error // what ApplyPayment answers
	status  int
	code    string // the error code; "" a success
}

// err is the error the case's request fails with.
func (tc providerCase) err() error {
	if tc.verify.err != nil {
		return tc.verify.err
	}
	return tc.applied
}

// Without a verifier, no route.
func TestProviderRoutesOnlyInTheirMode(t *testing.T) {
	h := rawAPI(t, func(d *Deps) { d.Payments = &recordingPayments{} })
	for _, p := range []string{"/webhooks/alipay", "/webhooks/wechatpay"} {
		w := send(h, http.MethodPost, p, []byte("x=1"), nil)
		require.Equal(t, http.StatusNotFound, w.Code, p)
	}
}

// A notification's body and headers — its signature, its encrypted
// payment — never reach the log, whatever the answer, at any level.
func TestProviderNotificationsAreNotLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, v := range []stubNotifications{{n: paid}, {n: notify.Notification{ID: "n1", State: "WAIT_BUYER_PAY"}},
		{err: fmt.Errorf("%w: x", notify.ErrSignature)}} {
		for _, applied := range []error{nil, errors.New("connection refused")} {
			h := rawAPI(t, func(d *Deps) {
				d.Log = log
				d.Payments = &recordingPayments{err: applied}
				d.Alipay, d.WeChatPay = v, v
			})
			send(h, http.MethodPost, "/webhooks/alipay", []byte("sign=SECRETSIGN&total_amount=1.00"), nil)
			send(h, http.MethodPost, "/webhooks/wechatpay", []byte(`{"resource":{"ciphertext":"SECRETCIPHER"}}`),
				map[string]string{"Wechatpay-Signature": "SECRETHEADER"})
		}
	}
	require.NotEmpty(t, buf.String())
	for _, secret := range []string{"SECRETSIGN", "SECRETCIPHER", "SECRETHEADER"} {
		assert.NotContains(t, buf.String(), secret)
	}
}
