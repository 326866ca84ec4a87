// Package configs embeds config.yaml, the documented default configuration,
// so the binary starts with the same defaults the file shows.
package configs

import _ "embed"

// Default is the text of config.yaml.
//
//go:embed config.yaml
var Default []byte
