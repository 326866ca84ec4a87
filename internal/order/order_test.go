package order

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidUserID(t *testing.T) {
	for _, ok := range []string{"u1", "alice@example.com", "user:42", "a-b_c.d"} {
		assert.True(t, ValidUserID(ok), ok)
	}
	for _, bad := range []string{"", "a b", "x' OR '1'='1", "{evil}", "ü", strings.Repeat("a", 65), "a\nb"} {
		assert.False(t, ValidUserID(bad), bad)
	}
}
