package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
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
