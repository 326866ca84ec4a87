package httpapi

import (
	"context"
	"net/http"
	"testing"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/room"
)

// checkedRooms are rooms that check each command as Room.Control does
// before it writes, and answer a running room.
type checkedRooms struct{ stubDraw }

func (*checkedRooms) Control(_ context.Context, sku uint64, c room.Command) (room.Controls, error) {
	if err := c.Validate(); err != nil {
		return room.Controls{}, err
	}
	return room.Controls{SKU: sku, State: room.Running, Changes: []room.Change{}}, nil
}

// FuzzRoomCommand: a room command is accepted only with a known action,
// and admit_per_second exactly with rate, from 0 to
// catalog.MaxAdmitPerSecond; anything else is a 4xx, never a 5xx.
func FuzzRoomCommand(f *testing.F) {
	for _, b := range []string{`{"action":"pause"}`, `{"action":"resume"}`, `{"action":"open"}`, `{"action":"close"}`,
		`{"action":"rate","admit_per_second":0}`, `{"action":"rate","admit_per_second":100000}`,
		`{"action":"rate","admit_per_second":100001}`, `{"action":"rate","admit_per_second":-1}`,
		`{"action":"rate"}`, `{"action":"rate","admit_per_second":null}`, `{"action":"rate","admit_per_second":1.5}`,
		`{"action":"pause","admit_per_second":5}`, `{"action":"PAUSE"}`, `{"action":""}`, `{"Action":"pause"}`,
		`{"action":"pause","why":"lunch"}`, `{"action":["pause"]}`} {
		f.Add([]byte(b))
	}
	for _, b := range hostile {
		f.Add([]byte(b))
	}
	h := testAPI(f, func(d *Deps) { d.Rooms = &checkedRooms{} })
	f.Fuzz(func(t *testing.T, body []byte) {
		var c room.Command
		err := decodeStrict(body, &c)
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			mustBe4xx(t, err, body)
		} else {
			switch {
			case c.Action == room.ActionRate && (c.AdmitPerSecond == nil || *c.AdmitPerSecond < 0 ||
				*c.AdmitPerSecond > catalog.MaxAdmitPerSecond):
				t.Fatalf("%q: accepted rate %v", body, c.AdmitPerSecond)
			case c.Action != room.ActionRate && c.AdmitPerSecond != nil:
				t.Fatalf("%q: accepted admit_per_second with %q", body, c.Action)
			case c.Action != room.ActionRate && c.Action != room.ActionPause && c.Action != room.ActionResume &&
				c.Action != room.ActionOpen && c.Action != room.ActionClose:
				t.Fatalf("%q: accepted action %q", body, c.Action)
			}
		}
		w := send(h, http.MethodPost, "/admin/skus/1/room", body, map[string]string{"Authorization": "Bearer " + testAdminToken})
		switch {
		case w.Code >= 500:
			t.Fatalf("POST /admin/skus/1/room %q: %d %s", body, w.Code, w.Body)
		case (err == nil) != (w.Code == http.StatusOK):
			t.Fatalf("POST /admin/skus/1/room %q: %d %s, decoded with %v", body, w.Code, w.Body, err)
		}
	})
}

func (*checkedRooms) CreateCodes(_ context.Context, sku uint64, n int) (room.Codes, error) {
	if err := (room.CodeCount{Count: n}).Validate(); err != nil {
		return room.Codes{}, err
	}
	return room.Codes{SKU: sku, Codes: make([]string, n), Total: int64(n)}, nil
}

// FuzzCodeRequest: codes are made only for a count from 1 to
// room.MaxCodesAtOnce; anything else is a 4xx, never a 5xx.
func FuzzCodeRequest(f *testing.F) {
	for _, b := range []string{`{"count":1}`, `{"count":1000}`, `{"count":1001}`, `{"count":0}`, `{"count":-1}`,
		`{"count":1.5}`, `{"count":"5"}`, `{}`, `{"count":5,"for":"staff"}`, `{"Count":5}`, `[5]`} {
		f.Add([]byte(b))
	}
	for _, b := range hostile {
		f.Add([]byte(b))
	}
	h := testAPI(f, func(d *Deps) { d.Rooms = &checkedRooms{} })
	f.Fuzz(func(t *testing.T, body []byte) {
		var c room.CodeCount
		err := decodeStrict(body, &c)
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			mustBe4xx(t, err, body)
		} else if c.Count < 1 || c.Count > room.MaxCodesAtOnce {
			t.Fatalf("%q: accepted count %d", body, c.Count)
		}
		w := send(h, http.MethodPost, "/admin/skus/1/room/codes", body, map[string]string{"Authorization": "Bearer " + testAdminToken})
		switch {
		case w.Code >= 500:
			t.Fatalf("POST /admin/skus/1/room/codes %q: %d %s", body, w.Code, w.Body)
		case (err == nil) != (w.Code == http.StatusCreated):
			t.Fatalf("POST /admin/skus/1/room/codes %q: %d %s, decoded with %v", body, w.Code, w.Body, err)
		}
	})
}
