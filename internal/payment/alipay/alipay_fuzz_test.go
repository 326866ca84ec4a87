package alipay

import (
	"errors"
	"testing"

	"github.com/seckill/seckill/internal/payment/notify"
)

// FuzzNotification: whatever the body, Verify returns a notification or an
// error wrapping one of notify's sentinels, never panics, and what it
// returns is bounded. decode, which runs only on a verified body, is fuzzed
// on the same input as if its signature had verified.
func FuzzNotification(f *testing.F) {
	f.Add(string(signed(f, notification(), keys()[0])))
	f.Add("notify_id=1&trade_no=2&out_trade_no=abc&trade_status=TRADE_SUCCESS&total_amount=1.5&app_id=" + appID)
	f.Add("a=%zz&b=1")
	f.Add("total_amount=99999999999999.999")
	v := verifier(f)
	f.Fuzz(func(t *testing.T, body string) {
		n, err := v.Verify([]byte(body), nil)
		check(t, n, err)
		if form, err := parseForm([]byte(body)); err == nil {
			_ = Content(form)
			n, err := decode(form)
			check(t, n, err)
		}
	})
}

func check(t *testing.T, n notify.Notification, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, notify.ErrMalformed) && !errors.Is(err, notify.ErrSignature) && !errors.Is(err, notify.ErrMerchant) {
			t.Fatalf("an error of no known kind: %v", err)
		}
		if len(err.Error()) > 300 {
			t.Fatalf("an unbounded error: %d bytes", len(err.Error()))
		}
		return
	}
	if !notify.Token(n.ID, notify.MaxIDLen) || !notify.Token(n.PaymentID, notify.MaxIDLen) || !notify.Reference(n.Reference) ||
		!notify.State(n.State) || n.AmountCents < 0 || n.Currency != Currency {
		t.Fatalf("a notification out of bounds: %+v", n)
	}
}
