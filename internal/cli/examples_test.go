package cli

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/doctest"
)

// TestHelpExamples runs the Example of every command's --help, each in a
// session of its own, in the order the commands are declared (so verify
// and queue find the SKUs seed's examples made), as internal/doctest says;
// a command whose "example" annotation says "not run" must say why.
func TestHelpExamples(t *testing.T) {
	_, commands := newRoot(&env{stdout: io.Discard, stderr: io.Discard})
	var blocks []doctest.Block
	for _, c := range commands {
		if c.Example == "" {
			assert.Fail(t, "no example", "%s --help shows no example", c.CommandPath())
			continue
		}
		b, err := doctest.HelpExample(c.CommandPath(), c.Example, c.Annotations["example"])
		require.NoError(t, err)
		if !b.Runs() {
			t.Logf("%s: not run: %s", b.Where(), b.NotRun)
		}
		blocks = append(blocks, b)
	}
	w := doctest.Setup(t)
	w.RunAll(t, blocks)
}
