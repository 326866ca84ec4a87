package doctest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// The two files a newcomer opens first stay short: the README shows a buy
// within its first 100 lines and ends by 250, BENCHMARKS.md gives the
// current figures in at most 300 lines. Depth goes to docs/, by reader, and
// earlier runs to docs/benchmarks-history.md.
func TestFrontDoorsStayShort(t *testing.T) {
	root, err := testutil.ModuleRoot()
	require.NoError(t, err)
	read := func(name string) []string {
		data, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	}
	readme := read("README.md")
	assert.LessOrEqual(t, len(readme), 250, "README.md lines")
	buy := -1
	for i, l := range readme {
		if strings.Contains(l, "curl") && strings.Contains(l, "/api/v1/orders") {
			buy = i + 1
			break
		}
	}
	assert.True(t, buy > 0 && buy <= 100, "the README's first buy is at line %d, want within the first 100", buy)
	assert.LessOrEqual(t, len(read("BENCHMARKS.md")), 300, "BENCHMARKS.md lines")
}
