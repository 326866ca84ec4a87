package httpapi

// Fuzz targets for everything the API decodes from a client before any I/O.
// Each property: no panic, and input is either accepted as a value within
// the documented bounds or refused with an error that toAPI maps to a 4xx.
//
// `go test ./internal/httpapi` runs only the seed corpus; scripts/fuzz.sh
// runs each target for a few seconds, for example:
//
//	go test -run '^$' -fuzz '^FuzzPlaceRequest$' -fuzztime 10s ./internal/httpapi

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/order"
)

// token is the documented form of user and request ids: 1 to 64 letters,
// digits or - _ . : @ (docs/shop/api.md#shopper-identity).
var token = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,64}$`)

// hostile are bodies every decoder must refuse or bound.
var hostile = []string{
	``, ` `, `null`, `[]`, `"x"`, `0`, `{`, `}`, `{}{}`, `{} x`, `{"a":1}`,
	`{"sku_id":-1}`, `{"sku_id":1e400}`, `{"sku_id":18446744073709551616}`, `{"qty":9223372036854775808}`,
	`{"sku_id":"1"}`, `{"sku_id":1.5}`, `{"sku_id":null,"qty":null}`, `{"sku_id":1,"sku_id":2}`,
	"{\"request_id\":\"\xff\xfe\"}", `{"request_id":"\u0000"}`, `{"name":"\ud800"}`,
	`{"starts_at":"yesterday"}`, `{"starts_at":"0000-01-01T00:00:00Z","ends_at":"9999-12-31T23:59:59Z"}`,
	`{"stock_total":-1}`, `{"stock_total":null}`, `{"stock_total":"5"}`,
	strings.Repeat(`[`, 10000), `{"a":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5001),
}

// mustBe4xx fails unless err maps to a client error.
func mustBe4xx(t *testing.T, err error, input any) {
	t.Helper()
	ae := toAPI(err)
	if ae.Status < 400 || ae.Status >= 500 {
		t.Fatalf("%q: error %v maps to %d %s, want a 4xx", input, err, ae.Status, ae.Code)
	}
}

func FuzzPlaceRequest(f *testing.F) {
	for _, b := range []string{
		`{"sku_id":1,"qty":1}`,
		`{"sku_id":42,"qty":2,"request_id":"c0ffee-01"}`,
		`{"sku_id":18446744073709551615,"qty":1000,"request_id":"` + strings.Repeat("r", 64) + `"}`,
		`{"sku_id":1,"qty":1001}`, `{"sku_id":0,"qty":1}`, `{"sku_id":1,"qty":0}`, `{"sku_id":1,"qty":-5}`,
		`{"sku_id":1,"qty":1,"request_id":"` + strings.Repeat("r", 65) + `"}`,
		`{"sku_id":1,"qty":1,"request_id":"a b"}`, `{"sku_id":1,"qty":1,"extra":true}`,
		// Shapes at the edge of the handler's fast path.
		`{"SKU_ID":1,"Qty":1}`, `{"sku_id":01,"qty":1}`, `{"sku_id":1,"qty":-0}`, `{"sku_id":999999999999999999,"qty":1}`,
		`{"sku_id":1234567890123456789,"qty":1}`, `{"sku_id":1,"qty":1e0}`, `{"sku_id":1,"qty":1,"request_id":"r\u0031"}`,
		// The ends of the SKU id range (1 to catalog.MaxID).
		`{"sku_id":9223372036854775807,"qty":1}`, `{"sku_id":9223372036854775808,"qty":1}`,
		`{"sku_id":1,"qty":1,"request_id":null}`, `{"sku_id":1,"qty":1,"qty":2}`, " \t\r\n{ \"sku_id\" : 1 , \"qty\" : 1 } \n",
		`{"sku_id":1,"qty":1,}`, `{,"sku_id":1}`, `{"sku_id":1 "qty":1}`, `{"sku_id":1,"qty":1}}`,
	} {
		f.Add([]byte(b), "alice")
	}
	for _, u := range []string{"", "bob@example.com", "user:42", strings.Repeat("u", 64), strings.Repeat("u", 65),
		"a b", "ali\x00ce", "élise", "a\r\nX-Admin: 1", "../../etc/passwd", "'; DROP TABLE orders;--"} {
		f.Add([]byte(`{"sku_id":1,"qty":1}`), u)
	}
	for _, b := range hostile {
		f.Add([]byte(b), "alice")
	}
	h := testAPI(f, nil)
	maxBody := testHTTP(f).MaxBodyBytes
	f.Fuzz(func(t *testing.T, body []byte, user string) {
		var req placeRequest
		err := decodeStrict(body, &req)
		// The handler's fast path must agree with the strict decoder on
		// every body it takes.
		var fast placeRequest
		if parsePlaceFast(body, &fast) && (err != nil || fast != req) {
			t.Fatalf("%q: fast path read %+v, strict decoder %+v (%v)", body, fast, req, err)
		}
		if err == nil {
			err = req.checkSKU()
		}
		if err == nil {
			in := order.PlaceInput{SKU: req.SKU, Qty: req.Qty, RequestID: req.RequestID}
			if err = in.Validate(user); err == nil {
				switch {
				case !token.MatchString(user):
					t.Fatalf("accepted user %q", user)
				case req.SKU == 0 || req.SKU > catalog.MaxID:
					t.Fatalf("accepted sku_id %d", req.SKU)
				case req.Qty < 1 || req.Qty > order.MaxQty:
					t.Fatalf("accepted qty %d", req.Qty)
				case req.RequestID != "" && !token.MatchString(req.RequestID):
					t.Fatalf("accepted request_id %q", req.RequestID)
				}
			}
		}
		if err != nil {
			mustBe4xx(t, err, body)
		}

		// The same request through the router: never a 5xx, and 202 exactly
		// when decode and validation accept it.
		w := send(h, http.MethodPost, "/api/v1/orders", body, map[string]string{"X-User-ID": user})
		switch {
		case w.Code >= 500:
			t.Fatalf("%q as %q: %d %s", body, user, w.Code, w.Body)
		case int64(len(body)) > maxBody:
			if w.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("%d-byte body: %d, want 413", len(body), w.Code)
			}
		case w.Code == http.StatusAccepted && err != nil:
			t.Fatalf("%q as %q: 202 for a request that fails validation (%v)", body, user, err)
		case err == nil && w.Code != http.StatusAccepted:
			t.Fatalf("%q as %q: %d %s for a valid request", body, user, w.Code, w.Body)
		}
	})
}

func FuzzSKURequest(f *testing.F) {
	for _, b := range []string{
		`{"name":"Phone X","price_cents":99900,"stock":10,"per_user_limit":1,"starts_at":"2026-11-11T00:00:00Z","ends_at":"2026-11-11T01:00:00Z"}`,
		`{"id":7,"name":"  padded  ","price_cents":0,"stock":0,"per_user_limit":1000,"starts_at":"2000-01-01T00:00:00Z","ends_at":"9000-12-31T00:00:00+08:00"}`,
		`{"name":"` + strings.Repeat("名", 200) + `","price_cents":100000000000,"stock":1000000000,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"name":"` + strings.Repeat("x", 201) + `","stock":1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"name":"x","price_cents":-1,"stock":1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"name":"x","stock":1000000001,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"name":"x","stock":1,"per_user_limit":0,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"name":"x","stock":1,"per_user_limit":1,"starts_at":"2026-01-02T00:00:00Z","ends_at":"2026-01-01T00:00:00Z"}`,
		`{"name":"x","stock":1,"per_user_limit":1,"starts_at":"1999-12-31T23:59:59Z","ends_at":"2026-01-01T00:00:00Z"}`,
		`{"name":"   ","stock":1,"per_user_limit":1}`, `{"name":"x","stock":1,"per_user_limit":1,"id":-3}`,
		`{"id":9223372036854775807,"name":"x","stock":1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"id":9223372036854775808,"name":"x","stock":1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"name":"x","stock":1,"per_user_limit":1,"buckets":64,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"name":"x","stock":1,"per_user_limit":1,"buckets":65,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"name":"x","stock":1,"per_user_limit":1,"buckets":-1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z"}`,
		`{"name":"x","stock":1,"per_user_limit":1,"buckets":1.5}`, `{"name":"x","stock":1,"per_user_limit":1,"buckets":"2"}`,
		`{"name":"Phone X"}`, `{"price_cents":0}`, `{"stock":2}`, `{"stock_total":12}`, `{"stock":5,"stock_total":6}`,
		`{"name":null}`, `{"ends_at":"2026-11-10T00:00:00Z"}`, `{"id":7,"buckets":1}`, `{"id":8}`, `{"buckets":2}`,
		`{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00.0001Z","ends_at":"2026-01-01T00:00:00.0004Z"}`,
		`{"name":"x","price_cents":1,"stock":1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2026-01-02T00:00:00Z",` +
			`"waiting_room":{"opens_at":"2025-12-31T00:00:00Z","mode":"fifo","admit_per_second":100,"pass_ttl":"90s","overbook":1.5}}`,
		`{"waiting_room":{"opens_at":"2025-12-31T00:00:00Z","overbook":1e308,"admit_per_second":-1,"pass_ttl":"-5s"}}`,
		`{"waiting_room":{"opens_at":"2025-12-31T00:00:00Z","overbook":-0.0,"pass_ttl":"9999999999h"}}`,
	} {
		f.Add([]byte(b))
	}
	for _, b := range hostile {
		f.Add([]byte(b))
	}
	// The SKU every body is also applied to as a patch.
	start := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	cur := catalog.SKU{ID: 7, Name: "Phone", PriceCents: 99900, StockTotal: 10, Sold: 3, PerUserLimit: 2, Buckets: 1,
		StartsAt: start, EndsAt: start.Add(time.Hour)}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req skuRequest
		err := decodeStrict(body, &req)
		if key, null := nullKey(body); err == nil && null {
			err = invalid("field " + key + " must not be null")
		}
		var spec catalog.Spec
		if err == nil {
			spec, err = req.spec()
		}
		if err != nil {
			mustBe4xx(t, err, body)
			return
		}
		if spec.ID > catalog.MaxID {
			if err := spec.Validate(); err == nil {
				t.Fatalf("accepted id %d", spec.ID)
			}
		}
		// As a create: every required field given, each within bounds.
		if sku, err := spec.New(start); err != nil {
			mustBe4xx(t, err, body)
		} else {
			checkSKU(t, body, sku)
		}
		// As a patch: within bounds, and what it does not give is kept.
		next, err := spec.Apply(cur, start)
		if err != nil {
			mustBe4xx(t, err, body)
			return
		}
		checkSKU(t, body, next)
		switch {
		case next.ID != cur.ID || next.Sold != cur.Sold || next.Buckets != cur.Buckets:
			t.Fatalf("%q: a patch changed the id, sold or buckets: %+v", body, next)
		case req.Name == nil && next.Name != cur.Name, req.PriceCents == nil && next.PriceCents != cur.PriceCents,
			req.Stock == nil && req.StockTotal == nil && next.StockTotal != cur.StockTotal,
			req.PerUserLimit == nil && next.PerUserLimit != cur.PerUserLimit,
			req.StartsAt == nil && !next.StartsAt.Equal(cur.StartsAt), req.EndsAt == nil && !next.EndsAt.Equal(cur.EndsAt):
			t.Fatalf("%q: a patch changed a field it does not give: %+v", body, next)
		case next.StockTotal < cur.Sold:
			t.Fatalf("%q: a patch took the stock below what is sold: %+v", body, next)
		}
	})
}

// checkSKU fails unless every field of sku, which body gave, is within the
// documented bounds.
func checkSKU(t *testing.T, body []byte, sku catalog.SKU) {
	t.Helper()
	n := utf8.RuneCountInString(sku.Name)
	switch {
	case sku.ID > catalog.MaxID:
		t.Fatalf("%q: accepted id %d", body, sku.ID)
	case n < 1 || n > catalog.MaxNameLen || sku.Name != strings.TrimSpace(sku.Name) || !utf8.ValidString(sku.Name):
		t.Fatalf("%q: accepted name %q", body, sku.Name)
	case sku.PriceCents < 0 || sku.PriceCents > catalog.MaxPriceCents:
		t.Fatalf("%q: accepted price_cents %d", body, sku.PriceCents)
	case sku.StockTotal < 0 || sku.StockTotal > catalog.MaxStock:
		t.Fatalf("%q: accepted stock %d", body, sku.StockTotal)
	case sku.PerUserLimit < 1 || sku.PerUserLimit > catalog.MaxPerUserLimit:
		t.Fatalf("%q: accepted per_user_limit %d", body, sku.PerUserLimit)
	case sku.Buckets < 1 || sku.Buckets > catalog.MaxBuckets:
		t.Fatalf("%q: accepted buckets %d", body, sku.Buckets)
	case !sku.EndsAt.After(sku.StartsAt) || sku.StartsAt.Year() < 2000 || sku.EndsAt.Year() > 9000 ||
		!sku.StartsAt.Equal(sku.StartsAt.Truncate(time.Millisecond)) || !sku.EndsAt.Equal(sku.EndsAt.Truncate(time.Millisecond)):
		t.Fatalf("%q: accepted window %s .. %s", body, sku.StartsAt.Format(time.RFC3339Nano), sku.EndsAt.Format(time.RFC3339Nano))
	case sku.Room.On() && (!(sku.Room.Overbook >= 1 && sku.Room.Overbook <= catalog.MaxOverbook) ||
		sku.Room.PassTTL() < catalog.MinPassTTL || sku.Room.PassTTL() > catalog.MaxPassTTL ||
		sku.Room.AdmitPerSecond < 0 || sku.Room.AdmitPerSecond > catalog.MaxAdmitPerSecond):
		t.Fatalf("%q: accepted waiting room %+v", body, sku.Room)
	}
}

func FuzzStockRequest(f *testing.F) {
	for _, b := range []string{`{"stock":0}`, `{"stock":10}`, `{"stock":1000000000}`,
		`{"stock":9223372036854775807}`, `{"stock":-9223372036854775808}`, `{"stock":1e3}`,
		`{"stock_total":10}`, `{"stock":10,"stock_total":10}`, `{"stock":10,"stock_total":11}`, `{"stock":null}`} {
		f.Add([]byte(b), "1")
	}
	for _, b := range hostile {
		f.Add([]byte(b), "1")
	}
	for _, id := range []string{"0", "-1", "18446744073709551616", "x", "1%2F2", "%00", "1.0",
		"9223372036854775807", "9223372036854775808", "18446744073709551615", "+1", "0x10"} {
		f.Add([]byte(`{"stock":5}`), id)
	}
	h := testAPI(f, nil)
	f.Fuzz(func(t *testing.T, body []byte, id string) {
		var req stockRequest
		err := decodeStrict(body, &req)
		var stock *int64
		if err == nil {
			stock, err = oneStock(req.Stock, req.StockTotal)
		}
		if err == nil && stock == nil {
			err = invalid("stock is required")
		}
		if err != nil {
			mustBe4xx(t, err, body)
		}
		w := send(h, http.MethodPut, "/admin/skus/"+url.PathEscape(id)+"/stock", body, map[string]string{"Authorization": "Bearer " + testAdminToken})
		if w.Code >= 500 {
			t.Fatalf("PUT /admin/skus/%s/stock %q: %d %s", id, body, w.Code, w.Body)
		}
		// A SKU id path parameter is 1 to catalog.MaxID in decimal, or 400.
		n, perr := strconv.ParseUint(id, 10, 64)
		inRange := perr == nil && catalog.ValidID(n)
		g := send(h, http.MethodGet, "/api/v1/skus/"+url.PathEscape(id), nil, nil)
		switch {
		case inRange && g.Code != http.StatusOK:
			t.Fatalf("GET /api/v1/skus/%s: %d %s", id, g.Code, g.Body)
		case !inRange && g.Code != http.StatusBadRequest && g.Code != http.StatusNotFound:
			t.Fatalf("GET /api/v1/skus/%s: %d %s, want 400", id, g.Code, g.Body)
		case !inRange && perr == nil && g.Code != http.StatusBadRequest:
			t.Fatalf("GET /api/v1/skus/%s: %d %s, want 400 for an id out of range", id, g.Code, g.Body)
		}
	})
}

// FuzzShopperToken: in jwt mode a request is answered 200 exactly when its
// Authorization header carries a token the library accepts for a valid
// shopper id, 401 otherwise, whatever X-User-ID says; never 5xx.
func FuzzShopperToken(f *testing.F) {
	h, mint := jwtAPI(f)
	exp := time.Now().Add(24 * time.Hour).Unix()
	good := mint(jwt.MapClaims{"sub": "alice", "exp": exp})
	for _, a := range []string{
		good, "bearer " + good[7:], good + "x", good[:len(good)-1], "Bearer " + good[7:strings.LastIndexByte(good, '.')+1],
		mint(jwt.MapClaims{"sub": "al ice", "exp": exp}), mint(jwt.MapClaims{"sub": strings.Repeat("a", 65), "exp": exp}),
		mint(jwt.MapClaims{"sub": "alice"}), mint(jwt.MapClaims{"exp": exp}),
		"Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.", "Basic YWxpY2U6cGFzcw==", "", "Bearer ", "Bearer ..",
	} {
		f.Add(a, "alice")
	}
	parser := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithLeeway(30*time.Second))
	f.Fuzz(func(t *testing.T, header, xUserID string) {
		w := send(h, http.MethodGet, "/api/v1/orders/1-0000000000000000000000000",
			nil, map[string]string{"Authorization": header, "X-User-ID": xUserID})
		valid := false
		if len(header) > 7 && strings.EqualFold(header[:7], "Bearer ") && len(header)-7 <= auth.MaxTokenBytes {
			claims := jwt.MapClaims{}
			_, err := parser.ParseWithClaims(header[7:], claims, func(*jwt.Token) (any, error) { return []byte(testJWTSecret), nil })
			sub, _ := claims["sub"].(string)
			valid = err == nil && token.MatchString(sub)
		}
		switch {
		case valid && w.Code != http.StatusOK:
			t.Fatalf("%q: %d %s for a valid token", header, w.Code, w.Body)
		case !valid && w.Code != http.StatusUnauthorized:
			t.Fatalf("%q with X-User-ID %q: %d, want 401", header, xUserID, w.Code)
		}
	})
}

// FuzzListQuery: the list endpoints (SKUs, admin SKUs, the shopper's
// orders) answer 200 or 400 invalid_request to any state, limit and cursor;
// a limit outside 1..100 or a cursor the API did not give is always 400.
func FuzzListQuery(f *testing.F) {
	for _, s := range [][3]string{
		{"live", "20", ""}, {"upcoming,live,sold_out,ended", "100", encodeCursor(3)}, {"", "0", "x"},
		{"live,", "101", encodeCursor(catalog.MaxID)}, {"LIVE", "-1", "c2t1OjA"}, {"ended", "1e2", "c2t1OjAx"},
		{"sold_out", "5", encodeOrderCursor(&order.Cursor{CreatedMS: 1795400000000, OrderID: "1-06h051n2p8v751m9hwfs1nee"})},
		{"", "", "b3JkZXI6LTE6YQ"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	h := testAPI(f, nil)
	admin := map[string]string{"Authorization": "Bearer " + testAdminToken}
	f.Fuzz(func(t *testing.T, state, limit, cursor string) {
		q := url.Values{}
		if state != "" {
			q.Set("state", state)
		}
		if limit != "" {
			q.Set("limit", limit)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		n, err := strconv.Atoi(limit)
		badLimit := limit != "" && (err != nil || n < 1 || n > 100)
		_, okCursor := decodeCursor(cursor)
		_, okOrderCursor := decodeOrderCursor(cursor)
		headers := map[string]string{"Authorization": admin["Authorization"], "X-User-ID": "alice"}
		for _, path := range []string{"/api/v1/skus?", "/admin/skus?", "/api/v1/orders?"} {
			badCursor := cursor != "" && !okCursor
			if path == "/api/v1/orders?" {
				badCursor = cursor != "" && !okOrderCursor
			}
			w := send(h, http.MethodGet, path+q.Encode(), nil, headers)
			switch {
			case w.Code != http.StatusOK && w.Code != http.StatusBadRequest:
				t.Fatalf("%s%s: %d %s", path, q.Encode(), w.Code, w.Body)
			case (badLimit || badCursor) && w.Code != http.StatusBadRequest:
				t.Fatalf("%s%s: %d, want 400", path, q.Encode(), w.Code)
			}
		}
	})
}
