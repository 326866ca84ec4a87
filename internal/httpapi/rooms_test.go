package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"

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

func (s *stubDraw) Join(context.Context, uint64, string) (room.Status, error) {
	return room.Status{}, room.ErrNoRoom
}

func (s *stubDraw) Peek(context.Context, uint64, string) (room.Status, error) {
	return room.Status{}, room.ErrNoRoom
}

const stubDrawDoc = `{"sku_id":1,"mode":"fifo","rule":"every ticket in the order it joined","pre_queue":[],"later":["toxl6hxode7whuaucrck42c6fvu"],"controls":[]}`

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
