package doctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

// TestLinks checks every link of every Markdown file of the repository, and
// every docs/…, README.md#… or other document named in its Go, YAML,
// scripts and configurations: the file exists, and so does the #section,
// as GitHub makes its anchors.
func TestLinks(t *testing.T) {
	root, err := testutil.ModuleRoot()
	require.NoError(t, err)
	links, err := RepositoryLinks(root)
	require.NoError(t, err)
	c := &Checker{Root: root}
	checked := 0
	for _, l := range links {
		if err := c.Check(l); err != nil {
			t.Error(err)
		}
		checked++
	}
	require.Positive(t, checked)
}

func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Quick start": "quick-start",
		"1. An instance killed with SIGKILL mid-sale and mid-batch": "1-an-instance-killed-with-sigkill-mid-sale-and-mid-batch",
		"9. A failover with wait_replicas 1: one replica or two":    "9-a-failover-with-wait_replicas-1-one-replica-or-two",
		"A fair sale: the waiting room":                             "a-fair-sale-the-waiting-room",
		"TLS to Redis and MySQL":                                    "tls-to-redis-and-mysql",
		"refund_due":                                                "refund_due",
		"One hot SKU over the Cluster: stock buckets":               "one-hot-sku-over-the-cluster-stock-buckets",
		"Fast as shipped (newest runs, same hour)":                  "fast-as-shipped-newest-runs-same-hour",
		"What 1–6 cost":                                             "what-16-cost",
		"Seed idea → where it is":                                   "seed-idea--where-it-is",
		"internal/lock — Redis locks":                               "internallock--redis-locks",
	} {
		assert.Equal(t, want, Slug(text), text)
	}
}

func TestAnchors(t *testing.T) {
	got := Anchors("# Title\n\n## `redis.wait_replicas` and [failover](x.md)\n" +
		"```sh\n# → not a heading\n```\n## Figures\n### Figures\n## Figures #\n<a id=\"kept\"></a>\n")
	for _, a := range []string{"title", "rediswait_replicas-and-failover", "figures", "figures-1", "figures-2", "kept"} {
		assert.True(t, got[a], a)
	}
	assert.False(t, got["-not-a-heading"])
	assert.Len(t, got, 6)
}

// TestCheck checks the links of testdata/links, a repository in small,
// against testdata/links.want: each link found, and what is wrong with it.
func TestCheck(t *testing.T) {
	root := filepath.Join("testdata", "links")
	links, err := RepositoryLinks(root)
	require.NoError(t, err)
	var got strings.Builder
	c := &Checker{Root: root}
	for _, l := range links {
		fmt.Fprintf(&got, "%s:%d %s\n", l.File, l.Line, l.Target)
		if err := c.Check(l); err != nil {
			fmt.Fprintf(&got, "\t%v\n", err)
		}
	}
	want, err := os.ReadFile(filepath.Join("testdata", "links.want"))
	require.NoError(t, err)
	assert.Equal(t, string(want), got.String())
}
