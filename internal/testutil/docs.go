package testutil

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// DocExample returns the fenced code block that follows the line
// "<!-- name -->" in the Markdown file at path, relative to the module root,
// so that a test can run what the documentation shows. It fails the test
// when there is none.
func DocExample(t testing.TB, path, name string) []byte {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	m := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(name) + " -->\\s*```[a-z]*\\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatalf("%s has no code block after <!-- %s -->", path, name)
	}
	return m[1]
}
