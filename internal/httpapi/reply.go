package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
)

// The buy path answers every request with one of two small JSON objects;
// they are written from pooled buffers instead of through gin.H and
// reflection. The bytes are the ones writeJSON would send: keys in sorted
// order, strings escaped as encoding/json escapes them without its HTML
// escapes (an answer is application/json, never HTML: a detail's < and >
// arrive as written).

var jsonContentType = []string{"application/json; charset=utf-8"}

var replyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// writeObject sends the JSON object with the given keys (sorted) and string
// values with status.
func writeObject(c *gin.Context, status int, kv ...string) {
	bp := replyBufs.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, kv[i])
		b = append(b, ':')
		b = appendJSONString(b, kv[i+1])
	}
	b = append(b, '}')
	c.Status(status)
	if h := c.Writer.Header(); len(h["Content-Type"]) == 0 {
		h["Content-Type"] = jsonContentType
	}
	_, _ = c.Writer.Write(b)
	*bp = b
	replyBufs.Put(bp)
}

// writeJSON sends v as JSON with status: encoding/json without its HTML
// escapes, as writeObject writes its objects.
func writeJSON(c *gin.Context, status int, v any) {
	bp := replyBufs.Get().(*[]byte)
	buf := bytes.NewBuffer((*bp)[:0])
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		replyBufs.Put(bp)
		_ = c.Error(err)
		c.Status(http.StatusInternalServerError)
		return
	}
	c.Status(status)
	if h := c.Writer.Header(); len(h["Content-Type"]) == 0 {
		h["Content-Type"] = jsonContentType
	}
	_, _ = c.Writer.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	*bp = buf.Bytes()
	replyBufs.Put(bp)
}

// appendJSONString appends s as a JSON string exactly as an encoding/json
// Encoder with SetEscapeHTML(false) writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
