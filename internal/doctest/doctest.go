// Package doctest runs the examples of the documentation as a reader would:
// the shell blocks of every Markdown file of the repository (MarkdownFiles
// lists them) and the Example of every `seckill` command's --help, taken
// from those texts when the tests run, never from a copy. It also checks
// the links of the documentation (Checker): every link of a Markdown file,
// and every document that Go code, YAML, scripts and configurations name.
//
// # What is an example
//
// In Markdown, a fenced block whose language is sh, bash, shell or console is
// a shell example; one in go, lua, yaml, js or javascript is an example that
// cannot run here. A block without a language that reads like commands (its
// first line starts with "$ ", "seckill ", "curl ", "go ", "make ", "export " or
// "docker ") is refused: give it a language. json blocks and blocks without a
// language show output and data, not examples. In --help, the Example of a
// command is one shell example.
//
// # Marking
//
// An HTML comment on the lines just before a Markdown fence says how its
// block runs (blank lines and other comments may sit between them):
//
//	<!-- example: not run (REASON) -->
//	<!-- example: session NAME -->
//
// "not run" needs a reason: what it needs that a test cannot give (a Docker
// engine, k6, minutes of load), or which test runs it instead. Every shell
// example without it runs, and every go, lua, yaml or js example must carry
// it. A command's Example is marked with the annotation "example" on the
// command, with the same "not run (REASON)" text.
//
// # How an example runs
//
// Each example runs in a bash session whose working directory is the
// repository's root and whose environment has no SECKILL_* variable. A
// Markdown block marked "session NAME" shares its session with the other
// blocks of that name, in the order of the files (README.md first, then the
// others as a walk of the tree finds them: a folder's entries by name, a
// subfolder's files in its place) and of the blocks in them, as one
// terminal a reader follows, across files too; any other block, and each
// command's Example, has a session of its own. Sessions run one after the other, against one Redis
// (127.0.0.1:6379) and one MariaDB (127.0.0.1:3306, root without a
// password) from scripts/test-services.sh, which is what the examples name.
// The database the README tells the reader to create (seckill, with the
// user seckill, password secret, of its DSN) is created before the run;
// what the examples write there and under the seckill: and load: key
// prefixes is deleted before and after it.
//
// A session runs the commands of a block one at a time (a command is a line,
// or the lines a trailing backslash, an open quote or a here-document join)
// and fails at the first that exits non-zero. Within it:
//
//   - seckill and `go run ./cmd/seckill` run one binary, built from this
//     module for the run (README: `go run ./cmd/seckill` works the same as
//     bin/seckill).
//   - `seckill serve` and `seckill worker` run in the background, as in a
//     second terminal: the next command starts once the server answers
//     /healthz on http.addr (SECKILL_HTTP_ADDR, default :8080) or the worker
//     has logged "workers started". A serve on an address where the session
//     already runs one first stops that one (Ctrl-C in its terminal). When the
//     session ends every server it started is sent SIGTERM and must exit 0.
//   - curl fails on an HTTP error status (4xx, 5xx), as a reader would notice
//     the error body; a command that asks for --fail itself keeps its own.
//   - "$ command" lines are commands and the lines after one, up to the next,
//     its output, which must match (as JSON when both parse as JSON).
//   - A "# → OUTPUT" line after a command is the output it shows the reader:
//     the command's must match it, where … stands for any text and <name> for
//     one value, which the session keeps. A later command's <name> is that
//     value: the only substitution made in an example, and only where the text
//     shows the reader where the value comes from.
//   - A command whose comment says "poll until WORD" is repeated, as the
//     reader is told to, until its output contains WORD (30 s at most).
package doctest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Block is one example.
type Block struct {
	File    string // where it is: a path from the repository's root, or "seckill queue --help"
	Line    int    // the line of its opening fence (0 for --help)
	Lang    string // sh, go, ...
	Text    string // its body
	NotRun  string // why it is not run; "" when it runs
	Session string // the session it shares; "" for one of its own
}

// Where names the block for a failure message.
func (b Block) Where() string {
	if b.Line == 0 {
		return b.File
	}
	return fmt.Sprintf("%s:%d", b.File, b.Line)
}

// Runs reports whether the block is a shell example to run.
func (b Block) Runs() bool { return shellLangs[b.Lang] && b.NotRun == "" }

var (
	shellLangs  = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}
	codeLangs   = map[string]bool{"go": true, "lua": true, "yaml": true, "yml": true, "js": true, "javascript": true}
	fence       = regexp.MustCompile("^( *)(```+|~~~+)\\s*([A-Za-z0-9_+-]*)\\s*$")
	marker      = regexp.MustCompile(`^\s*<!--\s*example:\s*(.*?)\s*-->\s*$`)
	comment     = regexp.MustCompile(`^\s*<!--.*-->\s*$`)
	notRun      = regexp.MustCompile(`^not run \((.+)\)$`)
	session     = regexp.MustCompile(`^session ([a-z0-9-]+)$`)
	commandLike = regexp.MustCompile(`^\s*(\$ |seckill |curl |go |make |export |docker )`)
)

// ParseDirective reads the text of an "example:" marker into a block.
func ParseDirective(text string, b *Block) error {
	if m := notRun.FindStringSubmatch(text); m != nil {
		if strings.TrimSpace(m[1]) == "" {
			return fmt.Errorf("%q: say why it is not run", text)
		}
		b.NotRun = strings.TrimSpace(m[1])
		return nil
	}
	if m := session.FindStringSubmatch(text); m != nil {
		b.Session = m[1]
		return nil
	}
	return fmt.Errorf("%q: want \"not run (REASON)\" or \"session NAME\"", text)
}

// Markdown returns the examples of the Markdown file at root/path, shell
// and code blocks, with their markers. A malformed marker, a marker before a
// block that is no example, a code example that is not marked "not run"
// and an unlabelled block that reads like commands are errors.
func Markdown(root, path string) ([]Block, error) {
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	var blocks []Block
	var errs []string
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s:%d: ", path, line)+fmt.Sprintf(format, args...))
	}
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, ticks, lang := m[1], m[2], strings.ToLower(m[3])
		start := i
		var body []string
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == ticks && strings.HasPrefix(lines[i], indent) {
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		b := Block{File: path, Line: start + 1, Lang: lang, Text: strings.Join(body, "\n") + "\n"}
		// Markers: the comments just above the fence.
		marked := false
		for j := start - 1; j >= 0; j-- {
			l := lines[j]
			if strings.TrimSpace(l) == "" {
				continue
			}
			if mm := marker.FindStringSubmatch(l); mm != nil {
				if err := ParseDirective(mm[1], &b); err != nil {
					fail(j+1, "%v", err)
				}
				marked = true
				continue
			}
			if comment.MatchString(l) {
				continue
			}
			break
		}
		switch {
		case shellLangs[lang]:
			blocks = append(blocks, b)
		case codeLangs[lang]:
			if b.NotRun == "" {
				fail(start+1, "a %s example cannot run here: mark it <!-- example: not run (REASON) --> with what runs it, or why nothing does", lang)
			}
			blocks = append(blocks, b)
		case marked:
			fail(start+1, "an example marker before a %q block, which is not an example", lang)
		case lang == "" && commandLike.MatchString(firstLine(b.Text)):
			fail(start+1, "this block reads like commands: label it sh (and mark it if it cannot run)")
		}
	}
	if len(errs) > 0 {
		return blocks, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return blocks, nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// HelpExample is the example of a command's --help: its Example text without
// the indentation cobra prints it with, and the "example" annotation.
func HelpExample(command, example, annotation string) (Block, error) {
	b := Block{File: command + " --help", Lang: "sh", Text: dedent(example)}
	if annotation != "" {
		if err := ParseDirective(annotation, &b); err != nil {
			return b, fmt.Errorf("%s: annotation example: %w", b.File, err)
		}
		if b.Session != "" {
			return b, fmt.Errorf("%s: a command's example has a session of its own", b.File)
		}
	}
	return b, nil
}

// dedent removes the indentation common to every non-blank line.
func dedent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			lines[i] = l[common:]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// step is one thing a session does: run a command, with what its output
// must match.
type step struct {
	line    int    // of the block, from 1
	command string // as written, placeholders included
	want    string // the output shown: "$" style (exact) or "# →" style (a pattern)
	pattern bool   // want is a "# →" pattern
	until   string // "poll until" word
}

var (
	arrow     = regexp.MustCompile(`^#\s*→\s*(.*)$`)
	pollUntil = regexp.MustCompile(`#.*\bpoll until (\S+)`)
)

// steps splits a block's text into its commands, their shown outputs and
// their polls. bash -n decides where a command ends.
func steps(text string) ([]step, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	prompt := false
	for _, l := range lines {
		if strings.HasPrefix(l, "$ ") {
			prompt = true
		}
	}
	var out []step
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimSpace(l)
		if prompt {
			if !strings.HasPrefix(l, "$ ") {
				if len(out) == 0 {
					return nil, fmt.Errorf("line %d: output before the first $ command", i+1)
				}
				out[len(out)-1].want += l + "\n"
				continue
			}
			l = strings.TrimPrefix(l, "$ ")
		} else {
			if m := arrow.FindStringSubmatch(trimmed); m != nil {
				if len(out) == 0 {
					return nil, fmt.Errorf("line %d: %q shows the output of no command", i+1, trimmed)
				}
				out[len(out)-1].want, out[len(out)-1].pattern = m[1], true
				continue
			}
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
		}
		first := i + 1
		cmd := l
		for !complete(cmd) {
			i++
			if i >= len(lines) {
				return nil, fmt.Errorf("line %d: the command does not end: %s", first, cmd)
			}
			cmd += "\n" + lines[i]
		}
		s := step{line: first, command: cmd}
		if m := pollUntil.FindStringSubmatch(cmd); m != nil {
			s.until = m[1]
		}
		out = append(out, s)
	}
	return out, nil
}

// complete reports whether bash reads cmd as whole commands.
func complete(cmd string) bool {
	if strings.HasSuffix(strings.TrimRight(cmd, " \t"), "\\") {
		return false
	}
	// A placeholder reads as a redirection until it is filled.
	c := exec.Command("bash", "-n")
	c.Stdin = strings.NewReader(placeholder.ReplaceAllString(cmd, "value") + "\n")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	// An unterminated here-document is only a warning to bash -n.
	return c.Run() == nil && !strings.Contains(stderr.String(), "here-document")
}

// matchShown compares a command's output with the output its example shows
// after "$ command": the same text, or the same JSON value.
func matchShown(want, got string) bool {
	w, g := strings.TrimSpace(want), strings.TrimSpace(got)
	if w == g {
		return true
	}
	wj, werr := canonicalJSON(w)
	gj, gerr := canonicalJSON(g)
	return werr == nil && gerr == nil && wj == gj
}

// matchPattern matches got against a "# →" pattern: … stands for any text,
// <name> for one value (no quote, no space), which it returns by name.
func matchPattern(pattern, got string) (map[string]string, bool) {
	var re strings.Builder
	re.WriteString(`^\s*`)
	rest := pattern
	names := placeholder.FindAllStringSubmatchIndex(rest, -1)
	last := 0
	quote := func(s string) string {
		return strings.ReplaceAll(regexp.QuoteMeta(s), regexp.QuoteMeta("…"), `.*?`)
	}
	seen := map[string]bool{}
	for _, m := range names {
		re.WriteString(quote(rest[last:m[0]]))
		name := rest[m[2]:m[3]]
		if seen[name] {
			re.WriteString(`[^"\s]+`)
		} else {
			re.WriteString(`(?P<` + name + `>[^"\s]+)`)
			seen[name] = true
		}
		last = m[1]
	}
	re.WriteString(quote(rest[last:]))
	re.WriteString(`\s*$`)
	r, err := regexp.Compile(re.String())
	if err != nil {
		return nil, false
	}
	m := r.FindStringSubmatch(got)
	if m == nil {
		return nil, false
	}
	vals := map[string]string{}
	for i, n := range r.SubexpNames() {
		if n != "" {
			vals[n] = m[i]
		}
	}
	return vals, true
}

// placeholder is <name> in a "# →" pattern or a command.
var placeholder = regexp.MustCompile(`<([a-z][a-z_]*)>`)

// fill replaces each <name> of cmd with the value the session kept.
func fill(cmd string, vals map[string]string) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(cmd, func(p string) string {
		name := p[1 : len(p)-1]
		if v, ok := vals[name]; ok {
			return v
		}
		missing = append(missing, p)
		return p
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s: no earlier \"# →\" line of this session shows where its value comes from", strings.Join(missing, ", "))
	}
	return out, nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
