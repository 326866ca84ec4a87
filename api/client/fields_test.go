package client

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequestTypesDoNotMixPointersAndValues: in every type a client writes
// (a request body, an operation's parameters, and the structs they hold),
// the fields are either all pointers, nil leaving a field out (the update
// forms, where a zero is a value to set), or all values, a zero leaving an
// optional field out (overlay.yaml says which). A type never asks for a
// pointer in one field and a value in the next.
func TestRequestTypesDoNotMixPointersAndValues(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "client.gen.go", nil, 0)
	require.NoError(t, err)
	structs := map[string]*ast.StructType{}
	var roots []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			switch typ := ts.Type.(type) {
			case *ast.StructType:
				structs[ts.Name.Name] = typ
				if strings.HasSuffix(ts.Name.Name, "Params") {
					roots = append(roots, ts.Name.Name)
				}
			case *ast.Ident:
				if ts.Assign != 0 && strings.HasSuffix(ts.Name.Name, "RequestBody") {
					roots = append(roots, typ.Name)
				}
			}
		}
	}
	require.Contains(t, roots, "PlaceOrderRequest")
	require.Contains(t, roots, "SKUSpec")

	seen := map[string]bool{}
	var mixed []string
	var walk func(name string)
	walk = func(name string) {
		st, ok := structs[name]
		if !ok || seen[name] {
			return
		}
		seen[name] = true
		var pointers, values []string
		for _, fld := range st.Fields.List {
			typ := fld.Type
			isPointer := false
			if star, ok := typ.(*ast.StarExpr); ok {
				isPointer, typ = true, star.X
			}
			if arr, ok := typ.(*ast.ArrayType); ok {
				typ = arr.Elt
			}
			for _, n := range fld.Names {
				if isPointer {
					pointers = append(pointers, n.Name)
				} else {
					values = append(values, n.Name)
				}
			}
			if id, ok := typ.(*ast.Ident); ok {
				walk(id.Name)
			}
		}
		if len(pointers) > 0 && len(values) > 0 {
			mixed = append(mixed, name+": pointers "+strings.Join(pointers, ", ")+"; values "+strings.Join(values, ", "))
		}
	}
	for _, r := range roots {
		walk(r)
	}
	sort.Strings(mixed)
	assert.Empty(t, mixed, "request types mixing pointer and value fields")
}
