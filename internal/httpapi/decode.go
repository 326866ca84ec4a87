package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// decodeJSON reads exactly one JSON object into v, refusing unknown fields,
// values of the wrong type, trailing data and bodies over the limit.
func decodeJSON(c *gin.Context, v any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}

// readBody reads the request body; errBodyTooLarge past the limit.
func readBody(c *gin.Context) ([]byte, error) {
	body, err := readAll(c.Request.Body, c.Request.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errBodyTooLarge
		}
		return nil, invalid("could not read the request body")
	}
	return body, nil
}

// readAll is io.ReadAll starting from a buffer of the declared length (plus
// one byte, to see the end without growing) when that is under ReadAll's
// 512 bytes: a buy body is a few dozen.
func readAll(r io.Reader, declared int64) ([]byte, error) {
	size := 512
	if declared >= 0 && declared < int64(size) {
		size = int(declared) + 1
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// decodeStrict decodes body, one JSON object, into the struct v points to.
// It refuses unknown fields, values of the wrong type and trailing data with
// an invalid-request error that says what is wrong.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid(jsonProblem(body, v, err))
	}
	if dec.More() {
		return invalid("body must hold one JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("body must hold one JSON object")
	}
	return nil
}

// jsonProblem says what is wrong with body, which failed to decode into v
// with err. encoding/json reports an unknown field with an untyped error, so
// that case is found by looking for the field (unknownField), not by err.
func jsonProblem(body []byte, v any, err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var pe *time.ParseError
	switch {
	case errors.As(err, &te) && te.Field != "":
		kind, ok := fieldKind(reflect.TypeOf(v).Elem(), te.Field)
		if !ok {
			kind = jsonKind(te.Type)
		}
		return fmt.Sprintf("field %s must be %s", te.Field, kind)
	case errors.As(err, &te):
		return "body must be a JSON object"
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	case errors.Is(err, io.EOF):
		return "empty body: a JSON object is required"
	case errors.As(err, &pe):
		return fmt.Sprintf("times must be RFC 3339, such as %q", time.RFC3339)
	}
	if name, ok := unknownField(body, reflect.TypeOf(v).Elem()); ok {
		return fmt.Sprintf("unknown field %q", name)
	}
	if json.Valid(body) {
		return "a field's value is not of the field's type"
	}
	return "malformed JSON"
}

// fieldKind is the `kind` tag of the field of struct type t that takes the
// JSON key name: what the field takes when its Go type says less (a SKU id
// is an integer from 1, not any unsigned one).
func fieldKind(t reflect.Type, name string) (string, bool) {
	if t.Kind() != reflect.Struct {
		return "", false
	}
	for _, f := range reflect.VisibleFields(t) {
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && strings.EqualFold(key, name) {
			return f.Tag.Lookup("kind")
		}
	}
	return "", false
}

// jsonKind names the JSON a Go type takes, for a client that never saw the
// Go type.
func jsonKind(t reflect.Type) string {
	if t == reflect.TypeFor[time.Time]() {
		return "an RFC 3339 time string"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer of 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// unknownField returns the first key of the JSON object body that no field
// of struct type t takes, matched as encoding/json matches them: by the
// field's JSON name, ignoring case.
func unknownField(body []byte, t reflect.Type) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return "", false
		}
		if !hasField(t, key) {
			return key, true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	return "", false
}

// hasField reports whether struct type t, or a struct it embeds, has a
// field that takes the JSON key.
func hasField(t reflect.Type, key string) bool {
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
			continue
		case f.Anonymous && name == "" && (f.Type.Kind() == reflect.Struct ||
			f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct):
			continue // its fields are promoted, and listed on their own
		case name == "":
			name = f.Name
		}
		if strings.EqualFold(name, key) {
			return true
		}
	}
	return false
}
