package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/room"
)

// stubDraw is the published draw of SKU 1, whose reads say they entered,
// then wait for release.
type stubDraw struct {
	entered chan struct{}
	release chan struct{}
}

func (s *stubDraw) JoinWithProof(context.Context, uint64, string, string) (room.Status, error) {
	return room.Status{}, room.ErrNoRoom
}

func (s *stubDraw) Challenge(context.Context, uint64, string) (room.Challenge, error) {
	return room.Challenge{}, room.ErrNoRoom
}

func (s *stubDraw) Peek(context.Context, uint64, string) (room.Status, error) {
	return room.Status{}, room.ErrNoRoom
}

const stubDrawDoc = `{"sku_id":1,"mode":"fifo","rule":"every ticket in the order it joined","pre_queue":[],"later":["toxl6hxode7whuaucrck42c6fvu"],"controls":[],"codes":[],"codes_made":0}`

func (s *stubDraw) Published(_ context.Context, sku uint64) ([]byte, error) {
	if sku != 1 {
		return nil, room.ErrNoRoom
	}
	s.entered <- struct{}{}
	<-s.release
	return []byte(stubDrawDoc), nil
}

// At most drawReaders answers of the draw are written at once; the next
// reader is told to come back (503 busy, Retry-After), and is served once
// a place is free.
func TestDrawReadersAreBounded(t *testing.T) {
	s := &stubDraw{entered: make(chan struct{}, drawReaders+2), release: make(chan struct{})}
	h := testAPI(t, func(d *Deps) { d.Rooms = s })
	var wg sync.WaitGroup
	codes := make([]int, drawReaders)
	for i := range drawReaders {
		wg.Go(func() { codes[i] = send(h, "GET", "/api/v1/skus/1/draw", nil, nil).Code })
	}
	for range drawReaders {
		<-s.entered
	}
	w := send(h, "GET", "/api/v1/skus/1/draw", nil, nil)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
	assert.Equal(t, "busy", errorCode(t, w))
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	close(s.release)
	wg.Wait()
	for _, code := range codes {
		assert.Equal(t, http.StatusOK, code)
	}

	w = send(h, "GET", "/api/v1/skus/1/draw", nil, nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, stubDrawDoc, w.Body.String())
	assert.Equal(t, strconv.Itoa(len(stubDrawDoc)), w.Header().Get("Content-Length"))
	assert.Equal(t, "application/json; charset=utf-8", w.Header().Get("Content-Type"))

	assert.Equal(t, http.StatusNotFound, send(h, "GET", "/api/v1/skus/2/draw", nil, nil).Code)
	assert.Equal(t, http.StatusBadRequest, send(h, "GET", "/api/v1/skus/0/draw", nil, nil).Code)
}

func (s *stubDraw) Control(context.Context, uint64, room.Command) (room.Controls, error) {
	return room.Controls{}, room.ErrNoRoom
}

func (s *stubDraw) Controls(context.Context, uint64) (room.Controls, error) {
	return room.Controls{}, room.ErrNoRoom
}

func (s *stubDraw) JoinWithCode(context.Context, uint64, string, string) (room.Status, error) {
	return room.Status{}, room.ErrNoRoom
}

func (s *stubDraw) CreateCodes(context.Context, uint64, int) (room.Codes, error) {
	return room.Codes{}, room.ErrNoRoom
}

func (s *stubDraw) CodeCounts(context.Context, uint64) (room.Codes, error) {
	return room.Codes{}, room.ErrNoRoom
}

// powRoom is a room of SKU 1 that answers a join by the proof it was
// given: the error named, or a ticket.
type powRoom struct {
	stubDraw
	mu     sync.Mutex
	proofs []string
}

var powErrors = map[string]error{"": room.ErrPowRequired, "malformed": room.ErrPowMalformed, "forged": room.ErrPowForged,
	"sku": room.ErrPowWrongSKU, "expired": room.ErrPowExpired, "unsolved": room.ErrPowUnsolved, "used": room.ErrPowUsed}

func (p *powRoom) JoinWithProof(_ context.Context, _ uint64, _, proof string) (room.Status, error) {
	p.mu.Lock()
	p.proofs = append(p.proofs, proof)
	p.mu.Unlock()
	if err, ok := powErrors[proof]; ok {
		return room.Status{}, err
	}
	return room.Status{Status: room.Waiting, RetryAfterMS: 1000, Ticket: "toxl6hxode7whuaucrck42c6fvu"}, nil
}

func (p *powRoom) Challenge(_ context.Context, sku uint64, _ string) (room.Challenge, error) {
	if sku != 1 {
		return room.Challenge{}, room.ErrPowOff
	}
	return room.Challenge{Challenge: "c1.1.1794355272000.AAAAAAAAAAAAAAAAAAAAAA.f0fd11b5.GQ3AmAmLWLKVZvpj-Hm4PLxxbxHrCPkQ5pY7V70NmMo",
		Bits: 16, ExpiresAt: time.UnixMilli(1794355272000).UTC()}, nil
}

// A join's proof of work is read from the Seckill-PoW header, and each way
// it fails has its status and code; the challenge is answered uncached.
func TestJoinProofOfWorkHeaderAndErrors(t *testing.T) {
	p := &powRoom{}
	h := testAPI(t, func(d *Deps) { d.Rooms = p })
	user := map[string]string{"X-User-ID": "alice"}
	for proof, want := range map[string]struct {
		status int
		code   string
	}{
		"":          {http.StatusForbidden, "pow_required"},
		"malformed": {http.StatusBadRequest, "pow_malformed"},
		"forged":    {http.StatusForbidden, "pow_invalid"},
		"sku":       {http.StatusForbidden, "pow_wrong_sku"},
		"expired":   {http.StatusForbidden, "pow_expired"},
		"unsolved":  {http.StatusForbidden, "pow_unsolved"},
		"used":      {http.StatusConflict, "pow_used"},
	} {
		headers := map[string]string{"X-User-ID": "alice"}
		if proof != "" {
			headers["Seckill-PoW"] = proof
		}
		w := send(h, "POST", "/api/v1/skus/1/queue", nil, headers)
		assert.Equal(t, want.status, w.Code, "%q: %s", proof, w.Body.String())
		assert.Equal(t, want.code, errorCode(t, w), proof)
	}
	w := send(h, "POST", "/api/v1/skus/1/queue", nil, map[string]string{"X-User-ID": "alice", "Seckill-PoW": "c1.x:42"})
	assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	p.mu.Lock()
	assert.Equal(t, "c1.x:42", p.proofs[len(p.proofs)-1], "the header, as sent")
	p.mu.Unlock()

	w = send(h, "GET", "/api/v1/skus/1/queue/challenge", nil, user)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	assert.JSONEq(t, `{"challenge":"c1.1.1794355272000.AAAAAAAAAAAAAAAAAAAAAA.f0fd11b5.GQ3AmAmLWLKVZvpj-Hm4PLxxbxHrCPkQ5pY7V70NmMo","bits":16,"expires_at":"2026-11-11T00:01:12Z"}`, w.Body.String())
	w = send(h, "GET", "/api/v1/skus/2/queue/challenge", nil, user)
	assert.Equal(t, http.StatusNotFound, w.Code)
	assert.Equal(t, "no_pow", errorCode(t, w))
	w = send(h, "GET", "/api/v1/skus/1/queue/challenge", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
}

// codeRoom is a room of SKU 1 that answers a join with a code by the code
// it was given: the error named, or a priority ticket.
type codeRoom struct{ powRoom }

// Codes of the stub, by what it answers them.
const (
	unknownCode = "cunknownunknownunknownunkno"
	usedCode    = "cusedusedusedusedusedusedus"
	ticketCode  = "cticketticketticketticketti"
	goodCode    = "cgoodgoodgoodgoodgoodgoodgo"
)

var codeErrors = map[string]error{"malformed": room.ErrCodeMalformed, unknownCode: room.ErrCodeUnknown,
	usedCode: room.ErrCodeUsed, ticketCode: room.ErrCodeAfterTicket}

func (p *codeRoom) JoinWithCode(_ context.Context, _ uint64, _, code string) (room.Status, error) {
	if err, ok := codeErrors[code]; ok {
		return room.Status{}, err
	}
	return room.Status{Status: room.Waiting, Position: 1, RetryAfterMS: 1000, Ticket: "toxl6hxode7whuaucrck42c6fvu", Priority: true}, nil
}

func (p *codeRoom) CreateCodes(_ context.Context, sku uint64, n int) (room.Codes, error) {
	if err := (room.CodeCount{Count: n}).Validate(); err != nil {
		return room.Codes{}, err
	}
	return room.Codes{SKU: sku, Codes: []string{"cabcdefghijklmnopqrstuvwxyz"}, Total: 1}, nil
}

// A join's priority code is read from the Seckill-Priority-Code header,
// before any proof of work, and each way it fails has its status and
// code; codes are made with POST /admin/skus/{id}/room/codes and answered
// uncached.
func TestJoinPriorityCodeHeaderAndErrors(t *testing.T) {
	h := testAPI(t, func(d *Deps) { d.Rooms = &codeRoom{} })
	for code, want := range map[string]struct {
		status int
		code   string
	}{
		"malformed": {http.StatusBadRequest, "code_malformed"},
		unknownCode: {http.StatusForbidden, "code_unknown"},
		usedCode:    {http.StatusConflict, "code_used"},
		ticketCode:  {http.StatusConflict, "code_after_ticket"},
	} {
		w := send(h, "POST", "/api/v1/skus/1/queue", nil, map[string]string{"X-User-ID": "alice", "Seckill-Priority-Code": code})
		assert.Equal(t, want.status, w.Code, "%q: %s", code, w.Body.String())
		assert.Equal(t, want.code, errorCode(t, w), code)
	}
	w := send(h, "POST", "/api/v1/skus/1/queue", nil, map[string]string{"X-User-ID": "alice", "Seckill-Priority-Code": goodCode, "Seckill-PoW": "used"})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.JSONEq(t, `{"status":"waiting","position":1,"ahead":0,"retry_after_ms":1000,"ticket":"toxl6hxode7whuaucrck42c6fvu","priority":true}`, w.Body.String())

	admin := map[string]string{"Authorization": "Bearer " + testAdminToken}
	w = send(h, "POST", "/admin/skus/1/room/codes", []byte(`{"count":1}`), admin)
	require.Equal(t, http.StatusCreated, w.Code, w.Body.String())
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	assert.JSONEq(t, `{"sku_id":1,"codes":["cabcdefghijklmnopqrstuvwxyz"],"total":1,"used":0}`, w.Body.String())
	for _, body := range []string{`{"count":0}`, `{"count":1001}`, `{}`, `{"count":"1"}`, `{"count":1,"x":1}`} {
		w = send(h, "POST", "/admin/skus/1/room/codes", []byte(body), admin)
		assert.Equal(t, http.StatusBadRequest, w.Code, body)
	}
	w = send(h, "POST", "/admin/skus/1/room/codes", []byte(`{"count":1}`), nil)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	w = send(h, "GET", "/admin/skus/1/room/codes", nil, admin)
	assert.Equal(t, http.StatusNotFound, w.Code, "the stub's counts: no room")
}
