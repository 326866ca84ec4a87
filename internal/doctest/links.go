package doctest

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Slug is the anchor GitHub gives a heading whose rendered text is text:
// lower case, every character that is not a letter, a digit, a hyphen or an
// underscore dropped, and each space made a hyphen.
func Slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	heading    = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	codeSpan   = regexp.MustCompile("`+")
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	linkTarget = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	codeSpans  = regexp.MustCompile("`[^`]*`")
	scheme     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// prose calls f with each line of a Markdown text that is outside fenced
// code blocks, and its number from 1.
func prose(text string, f func(n int, line string)) {
	var open string // the fence of the block we are in
	for i, l := range strings.Split(text, "\n") {
		if open != "" {
			if strings.TrimSpace(l) == open {
				open = ""
			}
			continue
		}
		if m := fence.FindStringSubmatch(l); m != nil {
			open = m[2]
			continue
		}
		f(i+1, l)
	}
}

// Anchors returns the anchors of a Markdown text as GitHub makes them: one
// per heading (a repeated one numbered -1, -2, …) and one per <a id="…">.
func Anchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	prose(text, func(_ int, l string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			return
		}
		t := inlineLink.ReplaceAllString(m[1], "$1")
		t = codeSpan.ReplaceAllString(t, "")
		t = htmlTag.ReplaceAllString(t, "")
		s := Slug(t)
		if n, ok := seen[s]; ok {
			for {
				n++
				if c := s + "-" + strconv.Itoa(n); !anchors[c] {
					seen[s] = n
					s = c
					break
				}
			}
		} else {
			seen[s] = 0
		}
		anchors[s] = true
	})
	return anchors
}

// Link is a link of a Markdown file, or a reference to a document in
// another file.
type Link struct {
	File   string // where it is, from the repository's root
	Line   int
	Target string // as written
}

// MarkdownLinks returns the targets of the links, images and link
// definitions of a Markdown text, outside code blocks and code spans.
func MarkdownLinks(file, text string) []Link {
	var links []Link
	prose(text, func(n int, l string) {
		l = codeSpans.ReplaceAllString(l, "")
		for _, m := range linkTarget.FindAllStringSubmatch(l, -1) {
			links = append(links, Link{File: file, Line: n, Target: m[1]})
		}
		if m := refDef.FindStringSubmatch(l); m != nil {
			links = append(links, Link{File: file, Line: n, Target: m[1]})
		}
	})
	return links
}

// docRef is a path in a file that is not Markdown that names a document of
// the repository: anything under docs/, or one of the Markdown files at the
// root or in loadtest/, with a #section or without.
var docRef = regexp.MustCompile(`(?:^|[^\w./-])(docs/[\w./-]*\w|(?:README|BENCHMARKS|CONTRIBUTING|CHANGELOG)\.md|loadtest/README\.md)(#[\w-]+)?`)

// References returns the documents a file that is not Markdown names, as
// links from the repository's root.
func References(file string, data []byte) []Link {
	var links []Link
	for i, l := range strings.Split(string(data), "\n") {
		for _, m := range docRef.FindAllStringSubmatch(l, -1) {
			links = append(links, Link{File: file, Line: i + 1, Target: "/" + m[1] + m[2]})
		}
	}
	return links
}

// Checker checks links against the files of a repository, reading each
// Markdown file's anchors once.
type Checker struct {
	Root    string
	anchors map[string]map[string]bool
}

// Check reports what is wrong with a link: a target that does not exist, or
// a #section that its Markdown file does not have. Links to other sites are
// not checked; a link starting with / is from the repository's root.
func (c *Checker) Check(l Link) error {
	target := l.Target
	if target == "" || scheme.MatchString(target) {
		return nil
	}
	file, frag, _ := strings.Cut(target, "#")
	if p, err := url.PathUnescape(file); err == nil {
		file = p
	}
	switch {
	case file == "":
		file = l.File
	case strings.HasPrefix(file, "/"):
		file = path.Clean(strings.TrimPrefix(file, "/"))
	default:
		file = path.Join(path.Dir(l.File), file)
	}
	if file == ".." || strings.HasPrefix(file, "../") {
		return fmt.Errorf("%s:%d: %s: outside the repository", l.File, l.Line, l.Target)
	}
	if _, err := os.Stat(filepath.Join(c.Root, filepath.FromSlash(file))); err != nil {
		return fmt.Errorf("%s:%d: %s: no such file or folder (%s)", l.File, l.Line, l.Target, file)
	}
	if frag == "" || !strings.HasSuffix(file, ".md") {
		return nil
	}
	anchors, err := c.anchorsOf(file)
	if err != nil {
		return err
	}
	if !anchors[frag] {
		return fmt.Errorf("%s:%d: %s: %s has no section #%s", l.File, l.Line, l.Target, file, frag)
	}
	return nil
}

func (c *Checker) anchorsOf(file string) (map[string]bool, error) {
	if a, ok := c.anchors[file]; ok {
		return a, nil
	}
	data, err := os.ReadFile(filepath.Join(c.Root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	if c.anchors == nil {
		c.anchors = map[string]map[string]bool{}
	}
	c.anchors[file] = Anchors(string(data))
	return c.anchors[file], nil
}

// RepositoryLinks returns every link of every Markdown file of the
// repository at root and every reference to a document in its other text
// files (Go, YAML, scripts, configurations), leaving out .git, node_modules,
// testdata and bin/.
func RepositoryLinks(root string) ([]Link, error) {
	var links []Link
	fsys := os.DirFS(root)
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata" || p == "bin" {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".md") {
			links = append(links, MarkdownLinks(p, string(data))...)
			return nil
		}
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return nil // binary
		}
		links = append(links, References(p, data)...)
		return nil
	})
	return links, err
}
