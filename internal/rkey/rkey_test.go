package rkey

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTag(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"sku:42", "{sku:42}"},
		{"{sku:42}", "{sku:42}"},
		{"orders{sku:42}", "orders{sku:42}"},
		{"{}x", "{{}x}"},
		{"a}b{", "{a}b{}"},
	} {
		assert.Equal(t, tc.want, Tag(tc.in), tc.in)
	}
}
