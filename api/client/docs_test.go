package client_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api/client"
	"github.com/seckill/seckill/internal/testutil"
)

// shopFront is the buy the package documentation and the README show,
// compiled here so that what they show builds. It is not run: it calls
// localhost:8080.
var _ = shopFront

func shopFront(ctx context.Context) error {
	shop, err := client.New("http://localhost:8080", client.WithShopper("alice")) // or client.WithBearer(jwt)
	if err != nil {
		return err
	}
	placed, err := shop.Buy(ctx, 42, 1) // SKU 42, one unit
	switch {
	case errors.Is(err, client.ErrSoldOut), errors.Is(err, client.ErrLimitExceeded):
		return tellTheShopper(err)
	case err != nil:
		return err // an *OutcomeUnknownError holds the request id that learns the outcome later
	}
	fmt.Println(placed.OrderId, placed.Status) // 42-…, queued
	return nil
}

func tellTheShopper(error) error { return nil }

// TestDocsShowTheCompiledShopFront: the buy of the package documentation
// and of the README is shopFront's body, line for line.
func TestDocsShowTheCompiledShopFront(t *testing.T) {
	fset := token.NewFileSet()
	src, err := os.ReadFile("docs_test.go")
	require.NoError(t, err)
	f, err := parser.ParseFile(fset, "docs_test.go", src, 0)
	require.NoError(t, err)
	var body string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "shopFront" {
			body = string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
		}
	}
	var lines []string
	for _, l := range strings.Split(strings.Trim(body, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	want := strings.Join(lines[:len(lines)-1], "\n") + "\n" // all but the return nil

	d, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)\n\n((?:\t[^\n]*\n)+)`).FindStringSubmatch(d.Doc.Text())
	require.NotNil(t, m, "the package documentation shows a buy")
	assert.Equal(t, want, strings.ReplaceAll(m[1], "\n\t", "\n")[1:], "doc.go")

	root, err := testutil.ModuleRoot()
	require.NoError(t, err)
	shop, err := os.ReadFile(filepath.Join(root, "docs", "shop", "api.md"))
	require.NoError(t, err)
	m = regexp.MustCompile("(?s)ExampleClient_Buy[^\n]*-->\n```go\n(.*?)```").FindStringSubmatch(string(shop))
	require.NotNil(t, m, "the shop front's docs show a buy after a marker naming ExampleClient_Buy")
	assert.Equal(t, want, m[1], "docs/shop/api.md")
}
