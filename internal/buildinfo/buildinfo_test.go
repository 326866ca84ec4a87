package buildinfo

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testutil"
)

func readRootFile(t *testing.T, name string) string {
	t.Helper()
	root, err := testutil.ModuleRoot()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, name))
	require.NoError(t, err, "the repository has %s", name)
	return string(b)
}

// TestChangelogNamesTheRelease: the newest release CHANGELOG.md describes,
// below its Unreleased section, is the one a binary built without -ldflags
// reports.
func TestChangelogNamesTheRelease(t *testing.T) {
	log := readRootFile(t, "CHANGELOG.md")
	headings := regexp.MustCompile(`(?m)^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$`).FindAllStringSubmatch(log, -1)
	require.GreaterOrEqual(t, len(headings), 2, "CHANGELOG.md has an Unreleased section and at least one release")
	assert.Equal(t, "Unreleased", headings[0][1], "the first section is Unreleased")
	assert.Equal(t, Release, headings[1][1], "the newest release of CHANGELOG.md is buildinfo.Release")
	assert.NotEmpty(t, headings[1][2], "a release has its date")
	assert.Regexp(t, `^\d+\.\d+\.\d+$`, Release, "a semantic version")
}

// TestVersionWithoutLdflags: a binary built without -ldflags (this test's)
// reports the release, not a placeholder.
func TestVersionWithoutLdflags(t *testing.T) {
	assert.Equal(t, Release, Version)
	assert.True(t, strings.HasPrefix(String(), Release+" "), String())
}

// TestLicenseFileIsTheOneNamed: LICENSE holds the licence the binary names.
func TestLicenseFileIsTheOneNamed(t *testing.T) {
	text := readRootFile(t, "LICENSE")
	assert.Equal(t, "Apache-2.0", License)
	assert.Contains(t, text, "Apache License\n                           Version 2.0, January 2004")
	assert.Contains(t, text, "END OF TERMS AND CONDITIONS")
	assert.Contains(t, text, "Copyright 2026 The seckill Authors")
	assert.Contains(t, readRootFile(t, "README.md"), "[Apache License 2.0](LICENSE)")
}
