package httpapi

import (
	"encoding/json"
	"sync"

	"github.com/gin-gonic/gin"
)

// The buy path answers every request with one of two small JSON objects;
// they are written from pooled buffers instead of through gin.H and
// reflection. The bytes are the ones c.JSON would send: keys in sorted order,
// strings escaped as encoding/json escapes them (HTML-safe).

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

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
