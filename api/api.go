// Package api holds seckill's HTTP API description, api/openapi.yaml (OpenAPI
// 3.1), embedded in the binary. The server serves it as JSON at
// GET /openapi.json; the tests hold every request and response they send to
// it.
package api

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// YAML is the document as written.
//
//go:embed openapi.yaml
var YAML []byte

// JSON returns the document as JSON.
func JSON() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(YAML, &doc); err != nil {
		return nil, fmt.Errorf("api: parse openapi.yaml: %w", err)
	}
	doc, err := jsonable(doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// jsonable turns the maps YAML decodes, whose keys may be of any type, into
// maps with string keys.
func jsonable(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			v[k] = j
		}
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = j
		}
		return m, nil
	case []any:
		for i, e := range v {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			v[i] = j
		}
		return v, nil
	}
	return v, nil
}
