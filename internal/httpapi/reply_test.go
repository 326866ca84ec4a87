package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"

	"github.com/seckill/seckill/internal/room"
)

// writeObject must send the bytes and header writeJSON sends for the same
// gin.H, and neither escapes < > & as HTML.
func TestWriteObjectMatchesWriteJSON(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, v := range []string{
		"", "plain", "42-06h051n2p8v751m9hwfs1nee", `quote " and \ backslash`, "<script>&</script>",
		"tab\tnew\nline\r", "\x00\x1f\x7f", "élise 名", "\u2028\u2029", "bad \xff utf-8", "sold out: sku 42",
	} {
		want := httptest.NewRecorder()
		cw, _ := gin.CreateTestContext(want)
		writeJSON(cw, http.StatusConflict, gin.H{"error": "sold_out", "detail": v})

		got := httptest.NewRecorder()
		cg, _ := gin.CreateTestContext(got)
		writeObject(cg, http.StatusConflict, "detail", v, "error", "sold_out")

		assert.Equal(t, want.Code, got.Code)
		assert.Equal(t, want.Header(), got.Header(), "%q", v)
		assert.Equal(t, want.Body.String(), got.Body.String(), "%q", v)
		assert.True(t, json.Valid(got.Body.Bytes()))
		var back map[string]string
		assert.NoError(t, json.Unmarshal(got.Body.Bytes(), &back))
		if utf8.ValidString(v) {
			assert.Equal(t, v, back["detail"])
		}
	}
	got := httptest.NewRecorder()
	cg, _ := gin.CreateTestContext(got)
	writeObject(cg, http.StatusConflict, "detail", "<script>&</script>")
	assert.Equal(t, `{"detail":"<script>&</script>"}`, got.Body.String())
}

// writeStatus sends the bytes writeJSON sends for the same room.Status.
func TestWriteStatusMatchesWriteJSON(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, st := range []room.Status{
		{},
		{Status: room.Waiting, Ticket: "tchoxykej46qs4opvrt2do57xpi", RetryAfterMS: 30000},
		{Status: room.Waiting, Position: 7, Ahead: 3, RetryAfterMS: 1000, Ticket: "t7"},
		{Status: room.Waiting, Position: 7, Ahead: 3, RetryAfterMS: 1000, Ticket: "t7", ETAMS: 1500, ETABasis: room.ETAMeasured},
		{Status: room.SoldOut, Position: 1 << 40, Ahead: 1<<40 - 1, RetryAfterMS: 5000, Ticket: "t"},
		{Status: room.Closed, Reason: "pass_used", Position: 2, Ticket: "t2"},
		{Status: room.Closed, Reason: "sale_ended"},
		{Status: `odd "status" <&>`, Ticket: "\u2028", Reason: "\xff"},
	} {
		want := httptest.NewRecorder()
		cw, _ := gin.CreateTestContext(want)
		writeJSON(cw, http.StatusOK, st)

		got := httptest.NewRecorder()
		cg, _ := gin.CreateTestContext(got)
		writeStatus(cg, st)

		assert.Equal(t, want.Code, got.Code)
		assert.Equal(t, want.Header(), got.Header(), "%+v", st)
		assert.Equal(t, want.Body.String(), got.Body.String(), "%+v", st)
	}
}
