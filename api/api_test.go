package api

import (
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocumentValidates: openapi.yaml is a valid OpenAPI 3.1 document, and
// its JSON form is the same document.
func TestDocumentValidates(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(YAML)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context))
	assert.True(t, doc.IsOpenAPI31OrLater())

	data, err := JSON()
	require.NoError(t, err)
	fromJSON, err := openapi3.NewLoader().LoadFromData(data)
	require.NoError(t, err)
	a, err := json.Marshal(doc)
	require.NoError(t, err)
	b, err := json.Marshal(fromJSON)
	require.NoError(t, err)
	assert.JSONEq(t, string(a), string(b))
}
