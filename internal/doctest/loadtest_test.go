package doctest

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// The examples of loadtest/README.md call k6 where `make k6` installs it,
// bin/k6 of the repository, which a fresh machine has after `make k6`
// whatever its PATH.
func TestK6IsCalledWhereMakeInstallsIt(t *testing.T) {
	root, err := testutil.ModuleRoot()
	require.NoError(t, err)
	cmd := exec.Command("make", "-n", "k6")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), "GOBIN="+filepath.Join(root, "bin")+" ")

	blocks, err := Markdown(root, "loadtest/README.md")
	require.NoError(t, err)
	run := regexp.MustCompile(`(\S*k6) run `)
	calls := 0
	for _, b := range blocks {
		for _, m := range run.FindAllStringSubmatch(b.Text, -1) {
			assert.Equal(t, "bin/k6", m[1], "%s: %s", b.Where(), m[0])
			calls++
		}
	}
	assert.Positive(t, calls)
}
