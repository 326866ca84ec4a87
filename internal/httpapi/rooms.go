package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/room"
)

// Rooms is what the waiting room endpoints need (internal/room).
type Rooms interface {
	// JoinWithProof joins with a proof of work, "<challenge>:<nonce>"
	// ("" none), which a room with pow_bits asks of a first join.
	JoinWithProof(ctx context.Context, sku uint64, user, proof string) (room.Status, error)
	Peek(ctx context.Context, sku uint64, user string) (room.Status, error)
	// Challenge is a proof of work for user's first join.
	Challenge(ctx context.Context, sku uint64, user string) (room.Challenge, error)
	// Published is the JSON document of a SKU's published draw, shared:
	// not to be modified.
	Published(ctx context.Context, sku uint64) ([]byte, error)
	// Control makes an operator's command on a SKU's room; Controls reads
	// the room's controls.
	Control(ctx context.Context, sku uint64, c room.Command) (room.Controls, error)
	Controls(ctx context.Context, sku uint64) (room.Controls, error)
	// JoinWithCode joins with a priority code; CreateCodes makes codes;
	// CodeCounts counts them.
	JoinWithCode(ctx context.Context, sku uint64, user, code string) (room.Status, error)
	CreateCodes(ctx context.Context, sku uint64, n int) (room.Codes, error)
	CodeCounts(ctx context.Context, sku uint64) (room.Codes, error)
}

// handleRoomControl makes an operator's command on a SKU's waiting room
// (pause, resume, rate, open, close) and answers the room's controls.
func handleRoomControl(rooms Rooms, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		var cmd room.Command
		if err := decodeJSON(c, &cmd); err != nil {
			writeError(c, log, err)
			return
		}
		ctl, err := rooms.Control(c.Request.Context(), id, cmd)
		if err != nil {
			writeError(c, log, err)
			return
		}
		writeJSON(c, http.StatusOK, ctl)
	}
}

// handleRoomControls answers a SKU's waiting room's controls.
func handleRoomControls(rooms Rooms, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		ctl, err := rooms.Controls(c.Request.Context(), id)
		if err != nil {
			writeError(c, log, err)
			return
		}
		writeJSON(c, http.StatusOK, ctl)
	}
}

// powHeader carries a join's proof of work: "<challenge>:<nonce>".
const powHeader = "Seckill-Pow" // Seckill-PoW in its canonical form

// codeHeader carries a join's priority code, which replaces its proof of
// work.
const codeHeader = "Seckill-Priority-Code"

// join is a join with the priority code of the request's
// Seckill-Priority-Code header, or else with the proof of work of its
// Seckill-PoW header, if any.
func join(rooms Rooms) func(c *gin.Context, sku uint64, user string) (room.Status, error) {
	return func(c *gin.Context, sku uint64, user string) (room.Status, error) {
		if v := c.Request.Header[codeHeader]; len(v) > 0 {
			return rooms.JoinWithCode(c.Request.Context(), sku, user, v[0])
		}
		var proof string
		if v := c.Request.Header[powHeader]; len(v) > 0 {
			proof = v[0]
		}
		return rooms.JoinWithProof(c.Request.Context(), sku, user, proof)
	}
}

// peek is a look at a shopper's place.
func peek(rooms Rooms) func(c *gin.Context, sku uint64, user string) (room.Status, error) {
	return func(c *gin.Context, sku uint64, user string) (room.Status, error) {
		return rooms.Peek(c.Request.Context(), sku, user)
	}
}

// handleChallenge answers a proof of work for the shopper's first join of
// a SKU's waiting room; never cached, as each is new.
func handleChallenge(rooms Rooms, log *slog.Logger) shopperHandler {
	return func(c *gin.Context, user string) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		ch, err := rooms.Challenge(c.Request.Context(), id, user)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.Header("Cache-Control", "no-store")
		writeJSON(c, http.StatusOK, ch)
	}
}

// handleRoom answers a shopper's place in a SKU's waiting room, joining it
// first (POST) or not (GET), with Retry-After: when to look again.
func handleRoom(visit func(c *gin.Context, sku uint64, user string) (room.Status, error), log *slog.Logger) shopperHandler {
	return func(c *gin.Context, user string) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		st, err := visit(c, id, user)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.Writer.Header()["Retry-After"] = []string{strconv.FormatInt(max((st.RetryAfterMS+999)/1000, 1), 10)}
		if st.Pass != "" {
			writeJSON(c, http.StatusOK, st)
			return
		}
		writeStatus(c, st)
	}
}

// writeStatus sends st, a place in a room without a pass (the answer to
// almost every look), from a pooled buffer: the bytes writeJSON would
// send, without its reflection.
func writeStatus(c *gin.Context, st room.Status) {
	bp := replyBufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"status":`...)
	b = appendJSONString(b, st.Status)
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, st.Position, 10)
	b = append(b, `,"ahead":`...)
	b = strconv.AppendInt(b, st.Ahead, 10)
	b = append(b, `,"retry_after_ms":`...)
	b = strconv.AppendInt(b, st.RetryAfterMS, 10)
	if st.Ticket != "" {
		b = append(b, `,"ticket":`...)
		b = appendJSONString(b, st.Ticket)
	}
	if st.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, st.Reason)
	}
	if st.Priority {
		b = append(b, `,"priority":true`...)
	}
	if st.ETABasis != "" {
		b = append(b, `,"eta_ms":`...)
		b = strconv.AppendInt(b, st.ETAMS, 10)
		b = append(b, `,"eta_basis":`...)
		b = appendJSONString(b, st.ETABasis)
	}
	b = append(b, '}')
	c.Status(http.StatusOK)
	c.Writer.Header()["Content-Type"] = jsonContentType
	_, _ = c.Writer.Write(b)
	*bp = b
	replyBufs.Put(bp)
}

// drawReaders is how many answers of the published draw an instance
// writes at once. Every reader is sent the same bytes, so one costs no
// memory of its own; but the draw of a large room is megabytes, and a
// slow reader holds its place until it has read them or the server's
// write timeout cuts it off.
const drawReaders = 16

// handleDraw answers a SKU's published draw, to at most drawReaders at a
// time; the others are told to come back (503 busy).
func handleDraw(rooms Rooms, log *slog.Logger) gin.HandlerFunc {
	readers := make(chan struct{}, drawReaders)
	return func(c *gin.Context) {
		id, err := pathID(c, "id")
		if err != nil {
			writeError(c, log, err)
			return
		}
		select {
		case readers <- struct{}{}:
			defer func() { <-readers }()
		default:
			writeError(c, log, errDrawReaders)
			return
		}
		doc, err := rooms.Published(c.Request.Context(), id)
		if err != nil {
			writeError(c, log, err)
			return
		}
		h := c.Writer.Header()
		h["Content-Type"] = jsonContentType
		h["Content-Length"] = []string{strconv.Itoa(len(doc))}
		c.Status(http.StatusOK)
		_, _ = c.Writer.Write(doc)
	}
}
