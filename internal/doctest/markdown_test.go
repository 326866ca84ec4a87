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

// TestMarkdownFiles lists the Markdown files of testdata/order, a
// repository in small, against testdata/order.want: the order in which
// sessions follow them.
func TestMarkdownFiles(t *testing.T) {
	files, err := MarkdownFiles(filepath.Join("testdata", "order"))
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "order.want"))
	require.NoError(t, err)
	assert.Equal(t, string(want), strings.Join(files, "\n")+"\n")
}

// TestMarkdownExamples runs every shell example of the repository's
// Markdown files that is not marked "not run", as the package comment says,
// and checks that every other example is marked with a reason.
func TestMarkdownExamples(t *testing.T) {
	root, err := testutil.ModuleRoot()
	require.NoError(t, err)
	files, err := MarkdownFiles(root)
	require.NoError(t, err)
	var blocks []Block
	for _, f := range files {
		bs, err := Markdown(root, f)
		assert.NoError(t, err)
		blocks = append(blocks, bs...)
	}
	runs := 0
	for _, b := range blocks {
		if b.Runs() {
			runs++
		}
		if !b.Runs() {
			t.Logf("%s (%s): not run: %s", b.Where(), b.Lang, b.NotRun)
		}
	}
	require.Positive(t, runs)
	w := Setup(t)
	w.RunAll(t, blocks)
}

func TestMarkers(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "x.md"), []byte(text), 0o600))
		return "x.md"
	}
	for name, tc := range map[string]struct {
		text    string
		err     string
		notRun  string
		session string
		n       int
	}{
		"plain sh runs":    {text: "```sh\necho hi\n```\n", n: 1},
		"not run":          {text: "<!-- example: not run (needs docker) -->\n\n```sh\ndocker ps\n```\n", n: 1, notRun: "needs docker"},
		"other comments":   {text: "<!-- example: session a -->\n<!-- tls-example -->\n```sh\necho\n```\n", n: 1, session: "a"},
		"no reason":        {text: "<!-- example: not run () -->\n```sh\nx\n```\n", err: "not run"},
		"unknown":          {text: "<!-- example: maybe -->\n```sh\nx\n```\n", err: "want"},
		"go unmarked":      {text: "```go\nx := 1\n```\n", err: "cannot run here"},
		"go marked":        {text: "<!-- example: not run (a fragment) -->\n```go\nx := 1\n```\n", n: 1, notRun: "a fragment"},
		"json is no ex.":   {text: "```json\n{}\n```\n"},
		"marker on json":   {text: "<!-- example: not run (x) -->\n```json\n{}\n```\n", err: "not an example"},
		"unlabelled cmds":  {text: "```\ncurl -s localhost:8080\n```\n", err: "label it sh"},
		"unlabelled text":  {text: "```\nseckill:{sku:42}:stock  the stock\n```\n"},
		"indented in list": {text: "1. do\n\n   ```sh\n   echo hi\n   ```\n", n: 1},
		"text between":     {text: "<!-- example: not run (x) -->\nSome text.\n```sh\necho\n```\n", n: 1},
	} {
		blocks, err := Markdown(dir, write(tc.text))
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, name)
			continue
		}
		require.NoError(t, err, name)
		require.Len(t, blocks, tc.n, name)
		if tc.n > 0 {
			assert.Equal(t, tc.notRun, blocks[0].NotRun, name)
			assert.Equal(t, tc.session, blocks[0].Session, name)
		}
	}
}

func TestSteps(t *testing.T) {
	got, err := steps("H='X: a'\ncurl -s x \\\n  -d '{\n  \"a\": 1}'\n# → {\"id\":\"<id>\"}\n# a comment\ncurl x/<id>   # poll until paid\ncat <<'EOF'\nhi\nEOF\n")
	require.NoError(t, err)
	require.Len(t, got, 4)
	assert.Equal(t, "curl -s x \\\n  -d '{\n  \"a\": 1}'", got[1].command)
	assert.Equal(t, `{"id":"<id>"}`, got[1].want)
	assert.True(t, got[1].pattern)
	assert.Equal(t, "paid", got[2].until)
	assert.Equal(t, "cat <<'EOF'\nhi\nEOF", got[3].command)

	got, err = steps("$ curl -s a\n{\"b\": 1}\n$ curl -s c\nok\n")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "curl -s a", got[0].command)
	assert.True(t, matchShown(got[0].want, `{"b":1}`))
	assert.False(t, matchShown(got[1].want, "ko"))

	_, err = steps("echo 'open\n")
	assert.Error(t, err)
}

func TestPatterns(t *testing.T) {
	vals, ok := matchPattern(`{"order_id":"<id>","status":"queued"}`, `{"order_id":"42-abc","status":"queued"}`+"\n")
	require.True(t, ok)
	assert.Equal(t, "42-abc", vals["id"])
	_, ok = matchPattern(`{"order_id":"<id>","status":"queued"}`, `{"order_id":"42-abc","status":"paid"}`)
	assert.False(t, ok)
	_, ok = matchPattern(`{"a":"…","b":1}`, `{"a":"anything at all","b":1}`)
	assert.True(t, ok)

	cmd, err := fill("curl x/<id>/pay", map[string]string{"id": "42-abc"})
	require.NoError(t, err)
	assert.Equal(t, "curl x/42-abc/pay", cmd)
	_, err = fill("curl x/<task>", nil)
	assert.ErrorContains(t, err, "<task>")
}
