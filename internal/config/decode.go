package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// mergeFile merges a YAML file over the defaults, refusing keys that the
// defaults do not know (a typo would otherwise be ignored silently).
func mergeFile(v *viper.Viper, path string, data []byte) error {
	file := viper.New()
	file.SetConfigType("yaml")
	if err := file.ReadConfig(bytes.NewReader(data)); err != nil {
		return &FileError{Path: path, err: fmt.Errorf("config: parse %s: %s", path, unquoted(err.Error()))}
	}
	known := map[string]bool{}
	for _, k := range v.AllKeys() {
		known[k] = true
	}
	for _, k := range file.AllKeys() {
		if !known[k] {
			return &Error{Key: k, Allowed: "unknown key in " + path}
		}
	}
	return v.MergeConfigMap(file.AllSettings())
}

// quotedInYAML matches what the YAML library quotes of a file in its errors:
// a value in backquotes, an anchor in single quotes, a map key in Go syntax
// (double quotes) and a tag.
var quotedInYAML = regexp.MustCompile("`[^`]*`|'[^']*'|\"(?:[^\"\\\\]|\\\\.)*\"|![^\\s]*")

// unquoted is the YAML library's message about a file it could not read
// without the parts of the file it quotes, which may be a secret (a password
// file passed as the config file, say): the line numbers and the nature of
// the problem stay.
func unquoted(msg string) string {
	return quotedInYAML.ReplaceAllStringFunc(msg, func(q string) string {
		if yamlTags[q] {
			return q
		}
		return "…"
	})
}

// yamlTags are the standard tags, which say what kind a value was and
// nothing of it.
var yamlTags = map[string]bool{"!!str": true, "!!int": true, "!!bool": true, "!!float": true,
	"!!null": true, "!!map": true, "!!seq": true, "!!binary": true, "!!timestamp": true}

// trimmedSliceHook turns "a, b,,c" into ["a","b","c"], the form lists take in
// the environment.
func trimmedSliceHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice {
		return data, nil
	}
	var out []string
	for _, s := range strings.Split(data.(string), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// decodeError turns a failed Unmarshal into an *Error naming the first key
// whose value did not decode (mapstructure joins one *DecodeError per key, in
// field order) and what that key accepts.
func decodeError(err error) error {
	var de *mapstructure.DecodeError
	if !errors.As(err, &de) || de.Name() == "" {
		// No key to blame: the decoder was misused, not misconfigured.
		return fmt.Errorf("config: %w", err)
	}
	ce := &Error{Key: fieldKey(de.Name()), Allowed: de.Unwrap().Error()}
	var ve *valueError
	var pe *mapstructure.ParseError
	switch {
	case errors.As(de, &ve):
		ce.Value, ce.Allowed = ve.value, ve.allowed
	case errors.As(de, &pe):
		// Only numbers and booleans fail to parse, never a secret: the value
		// can be shown.
		if s, ok := pe.Value.(string); ok {
			ce.Value = s
		}
		ce.Allowed = parseAllowed(pe)
	}
	return ce
}

// fieldKey is the configuration key of a mapstructure field name: an element
// of a list ("redis.addrs[1]") is set through the list's key.
func fieldKey(name string) string {
	if i := strings.IndexByte(name, '['); i > 0 {
		return name[:i]
	}
	return name
}

// parseAllowed says what a key whose value did not parse accepts.
func parseAllowed(pe *mapstructure.ParseError) string {
	var ne *strconv.NumError
	outOfRange := errors.As(pe.Err, &ne) && errors.Is(ne.Err, strconv.ErrRange)
	switch pe.Expected.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if outOfRange {
			return "an integer, and this one is out of range"
		}
		return "an integer, e.g. 100"
	case reflect.Float32, reflect.Float64:
		if outOfRange {
			return "a number, and this one is out of range"
		}
		return "a number, e.g. 0.5"
	}
	return pe.Error()
}

// valueError is a value a decode hook could not convert; decodeError adds
// the key.
type valueError struct {
	value   string
	allowed string
	err     error
}

func (e *valueError) Error() string { return e.allowed + ": " + e.err.Error() }
func (e *valueError) Unwrap() error { return e.err }

var durationType = reflect.TypeFor[time.Duration]()

// durationHook parses strings such as "5s" into time.Duration; one that does
// not parse is a *valueError.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to != durationType {
		return data, nil
	}
	s := data.(string)
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, &valueError{value: s, allowed: "a duration such as 300ms, 5s or 1h30m (at most 2562047h)", err: err}
	}
	return d, nil
}
