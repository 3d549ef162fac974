package names

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const spanImport = "github.com/podchron/podchron/internal/span"

// TestNoLiteralSpanEventNames reads every non-test Go file under internal/
// and fails when a span event's name is spelled out there rather than taken
// from this package: a span.SpanEvent literal whose Name (keyed or first
// positional element) holds a string literal anywhere in its expression (a
// literal, "signal "+sig, fmt.Sprintf("...", ...)), or an assignment of such
// an expression to the Name of something declared as a SpanEvent.
func TestNoLiteralSpanEventNames(t *testing.T) {
	root := ".."
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		for _, bad := range literalEventNames(t, path) {
			t.Errorf("%s: span event name %s is not from internal/names", bad.pos, bad.expr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d files under internal/, want the whole tree", files)
	}
}

// TestNoLiteralSpanEventNamesCatches runs the check on code that spells
// event names out, the ways the model once did.
func TestNoLiteralSpanEventNamesCatches(t *testing.T) {
	src := `package x
import sp "` + spanImport + `"
func f(sig, reason string, evs []sp.SpanEvent) {
	_ = sp.SpanEvent{Name: "probe failed"}
	_ = sp.SpanEvent{Name: "signal " + sig}
	_ = &sp.SpanEvent{"k8s." + reason, t0, nil}
	_ = []sp.SpanEvent{{Name: "oom_kill"}}
	var ev sp.SpanEvent
	ev.Name = "x"
	evs[0].Name = "y"
	_ = sp.SpanEvent{Name: reason}
}
`
	path := filepath.Join(t.TempDir(), "x.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := literalEventNames(t, path); len(got) != 6 {
		t.Errorf("found %d literal event names, want 6: %v", len(got), got)
	}
}

type finding struct{ pos, expr string }

// literalEventNames returns the span event names in a file that hold a
// string literal.
func literalEventNames(t *testing.T, path string) []finding {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(filepath.Dir(path)) == "names" && f.Name.Name == "names" {
		return nil
	}
	local := ""
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == spanImport {
			local = "span"
			if im.Name != nil {
				local = im.Name.Name
			}
		}
	}
	inSpan := f.Name.Name == "span"
	if local == "" && !inSpan {
		return nil
	}
	// isEvent: a type expression naming span.SpanEvent.
	isEvent := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			return ok && x.Name == local && e.Sel.Name == "SpanEvent"
		case *ast.Ident:
			return inSpan && e.Name == "SpanEvent"
		}
		return false
	}
	var elemOf func(e ast.Expr) ast.Expr
	elemOf = func(e ast.Expr) ast.Expr {
		switch e := e.(type) {
		case *ast.StarExpr:
			return elemOf(e.X)
		case *ast.ArrayType:
			return elemOf(e.Elt)
		case *ast.MapType:
			return elemOf(e.Value)
		}
		return e
	}
	var out []finding
	report := func(n ast.Expr) {
		if hasStringLit(n) {
			out = append(out, finding{fset.Position(n.Pos()).String(), exprString(fset, n)})
		}
	}
	checkLit := func(cl *ast.CompositeLit) {
		for i, el := range cl.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
					report(kv.Value)
				}
			} else if i == 0 {
				report(el)
			}
		}
	}
	// Names declared with a SpanEvent type (vars, params, fields, results):
	// their .Name, directly or through an index, is an event's name.
	events := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if isEvent(elemOf(n.Type)) {
				for _, id := range n.Names {
					events[id.Name] = true
				}
			}
		case *ast.ValueSpec:
			if n.Type != nil && isEvent(elemOf(n.Type)) {
				for _, id := range n.Names {
					events[id.Name] = true
				}
			}
		case *ast.AssignStmt:
			for i, r := range n.Rhs {
				if u, ok := r.(*ast.UnaryExpr); ok {
					r = u.X
				}
				if cl, ok := r.(*ast.CompositeLit); ok && cl.Type != nil && isEvent(elemOf(cl.Type)) && i < len(n.Lhs) {
					if id, ok := n.Lhs[i].(*ast.Ident); ok {
						events[id.Name] = true
					}
				}
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if n.Type == nil {
				return true
			}
			if isEvent(n.Type) {
				checkLit(n)
			} else if isEvent(elemOf(n.Type)) && n.Type != elemOf(n.Type) {
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						el = kv.Value
					}
					if cl, ok := el.(*ast.CompositeLit); ok && cl.Type == nil {
						checkLit(cl)
					}
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				sel, ok := l.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Name" || i >= len(n.Rhs) {
					continue
				}
				if eventExpr(sel.X, events) {
					report(n.Rhs[i])
				}
			}
		}
		return true
	})
	return out
}

// eventExpr: an expression that is a declared event, or an element of a
// slice of them (x[i], s.Events[i]).
func eventExpr(e ast.Expr, events map[string]bool) bool {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			if sel, ok := x.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Events" {
				return true
			}
			e = x.X
		case *ast.Ident:
			return events[x.Name]
		default:
			return false
		}
	}
}

// hasStringLit reports whether an expression holds a string literal.
func hasStringLit(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			found = true
		}
		return !found
	})
	return found
}

func exprString(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, e); err != nil {
		return err.Error()
	}
	return b.String()
}
