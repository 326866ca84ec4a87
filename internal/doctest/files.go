package doctest

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// MarkdownFiles returns the Markdown files of the repository at root, as
// paths from root, in the order sessions follow them: README.md first, then
// every other one in the order of a walk of the tree, where a folder's
// entries come by name and a subfolder's files come in its place
// (the files at the root, then docs/ and its folders, then loadtest/).
// Folders whose name starts with a dot, node_modules and testdata are left
// out.
func MarkdownFiles(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".md") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel != "README.md" {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}
