package lock_test

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the code blocks of README.md from example_test.go")

// readmeMarker is the line before each Go block of README.md: the
// declaration of example_test.go the block must equal.
var readmeMarker = regexp.MustCompile(`^<!-- example: not run \(([\w.]+) in example_test.go runs it\) -->$`)

// TestREADMEMatchesExamples keeps every Go block of README.md equal to the
// declaration of example_test.go its marker names, and shows every Example.
// go test -run TestREADME -update rewrites the blocks.
func TestREADMEMatchesExamples(t *testing.T) {
	decls := exampleDecls(t)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	lines := strings.Split(string(readme), "\n")
	shown := map[string]bool{}
	var out []string
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		m := readmeMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		name := m[1]
		want, ok := decls[name]
		if !assert.True(t, ok, "README.md:%d names %s, which example_test.go does not declare", i+1, name) {
			continue
		}
		shown[name] = true
		require.Less(t, i+1, len(lines))
		require.Equal(t, "```go", lines[i+1], "README.md:%d: a go block follows the marker", i+2)
		end := i + 2
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		require.Less(t, end, len(lines), "README.md:%d: unterminated block", i+2)
		got := strings.Join(lines[i+2:end], "\n")
		if *update {
			got = want
		}
		assert.Equal(t, want, got, "README.md:%d: the block of %s differs from example_test.go (go test -run TestREADME -update)", i+2, name)
		out = append(out, "```go", got, "```")
		i = end
	}
	for name := range decls {
		if strings.HasPrefix(name, "Example") {
			assert.True(t, shown[name], "README.md does not show %s", name)
		}
	}
	if *update {
		require.NoError(t, os.WriteFile("README.md", []byte(strings.Join(out, "\n")), 0o644))
	}
}

// exampleDecls returns the source of each top-level function, method
// ("type.method") and type of example_test.go, by name.
func exampleDecls(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments|parser.SkipObjectResolution)
	require.NoError(t, err)
	text := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	decls := map[string]string{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil {
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				name = recv.(*ast.Ident).Name + "." + name
			}
			decls[name] = text(d)
		case *ast.GenDecl:
			if d.Tok == token.TYPE {
				decls[d.Specs[0].(*ast.TypeSpec).Name.Name] = text(d)
			}
		}
	}
	return decls
}
