package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A refused body's detail says what is wrong in the terms of the JSON the
// client sent, not of the Go types behind it.
func TestDecodeStrictSaysWhatIsWrong(t *testing.T) {
	type embedded struct {
		Note string `json:"note"`
	}
	type Extra struct {
		Color string `json:"color"`
	}
	type request struct {
		embedded
		*Extra
		ID      uint64    `json:"id"`
		Qty     int       `json:"qty"`
		Stock   *int64    `json:"stock_total,omitempty"`
		At      time.Time `json:"starts_at"`
		Name    string
		Skipped string `json:"-"`
	}
	for body, want := range map[string]string{
		`{"id":1,"extra":true}`:             `unknown field "extra"`,
		`{"id":1,"Skipped":"x"}`:            `unknown field "Skipped"`,
		`{"ID":1,"NAME":"x","note":"n"}`:    "", // names match as encoding/json matches them
		`{"id":-1}`:                         "field id must be an integer of 0 or more",
		`{"qty":1.5}`:                       "field qty must be an integer",
		`{"stock_total":"3"}`:               "field stock_total must be an integer",
		`{"starts_at":"yesterday"}`:         `times must be RFC 3339, such as "2006-01-02T15:04:05Z07:00"`,
		`{"starts_at":5}`:                   "a field's value is not of the field's type",
		`{"Name":1}`:                        "field Name must be a string",
		`[1]`:                               "body must be a JSON object",
		`{"id":1,}`:                         "malformed JSON at byte 9",
		``:                                  "empty body: a JSON object is required",
		`{"id":1}{}`:                        "body must hold one JSON object",
		`{"id":1,"extra":{"deep":[1,2,3]}}`: `unknown field "extra"`,
		`{"color":"red"}`:                   "", // promoted through an embedded pointer
		`{"Extra":{"color":"red"}}`:         `unknown field "Extra"`,
	} {
		var req request
		err := decodeStrict([]byte(body), &req)
		if want == "" {
			assert.NoError(t, err, body)
			continue
		}
		var e *Error
		require.ErrorAs(t, err, &e, body)
		assert.Equal(t, http.StatusBadRequest, e.Status, body)
		assert.Equal(t, want, e.Detail, body)
	}
}
