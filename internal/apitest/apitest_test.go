package apitest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Check holds an answer to the schema of its status in the document: a
// null where it says array (OpenAPI 3.1 spells a nullable one
// type: [array, 'null']), a missing required field or one of the wrong
// type fails, as does an undocumented status.
func TestCheckHoldsAnswersToTheirSchema(t *testing.T) {
	draw := func(preQueue string) string {
		return `{"sku_id":1,"mode":"random","rule":"r","pre_queue":` + preQueue + `,"later":["toxl6hxode7whuaucrck42c6fvu"],"controls":[],"codes":[],"codes_made":0}`
	}
	for name, c := range map[string]struct {
		status int
		body   string
		ok     bool
	}{
		"empty list":      {200, draw(`[]`), true},
		"a ticket":        {200, draw(`["toxl6hxode7whuaucrck42c6fvu"]`), true},
		"null for a list": {200, draw(`null`), false},
		"a string":        {200, draw(`"toxl6hxode7whuaucrck42c6fvu"`), false},
		"not a ticket":    {200, draw(`["x"]`), false},
		"missing":         {200, `{"sku_id":1,"mode":"random","rule":"r","later":[]}`, false},
		"unknown field":   {200, `{"sku_id":1,"mode":"random","rule":"r","pre_queue":[],"later":[],"controls":[],"codes":[],"codes_made":0,"x":1}`, false},
		"an error":        {409, `{"error":"draw_not_published","detail":"d"}`, true},
		"undocumented":    {418, `{"error":"teapot","detail":"d"}`, false},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://seckill.test/api/v1/skus/1/draw", nil)
		err := Check(req, nil, c.status, http.Header{"Content-Type": {"application/json"}}, []byte(c.body))
		if c.ok {
			assert.NoError(t, err, name)
		} else {
			assert.Error(t, err, name)
		}
	}
}
