package all_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/component"
)

const modulePath = "github.com/arvenza/helix"

// schemeSwitchAllowed lists the places outside a component's folder that may still
// name its scheme in a comparison, a switch case or a map key, each with why.
// Keys are "path/from/repo/root.go scheme".
var schemeSwitchAllowed = map[string]string{
	// pkg/uri sits below the component registry (pkg/component imports it): that
	// the address of file:// is all path, with no host, is URI syntax it applies
	// when expanding placeholders, as Parse does.
	"pkg/uri/placeholder.go file": "URI syntax below the registry",
	// Not traits but one component's own story told by the application wiring
	// that already imports the component: the manifest lists the HTTP routes of
	// http-server:// triggers, validation warns of direct:// targets nobody
	// consumes and of choices on HelixMcpIsError after mcp:// targets.
	"pkg/app/management.go http-server": "manifest of HTTP routes",
	"pkg/app/validate.go direct":        "direct:// targets without a consumer",
	"pkg/app/validate.go mcp":           "HelixMcpIsError after an mcp:// target",
	// A workflow triggered by mcp-server:// is an MCP server, not a tool; the tool
	// package cannot import the MCP server module, which imports it.
	"internal/tool/workflow.go mcp-server": "an MCP server is not a tool",
}

// A component's scheme is its module's business: code outside the component's
// folder reads the module's traits (component.Lookup, Spec.FreshExchanges,
// Spec.Trace …) instead of comparing a scheme string. This check fails when a
// string literal equal to a registered scheme is a switch case, a map key or
// index, or an operand of == or != in a non-test Go file outside the folder of the
// package that registered the scheme.
func TestNoSchemeSwitchesOutsideTheirModule(t *testing.T) {
	owner := map[string]string{} // scheme → import path of its module's package
	for _, m := range component.Modules() {
		for _, s := range m.Spec.Schemes() {
			owner[s] = m.Package()
		}
	}
	for _, s := range component.AbsentSchemes() {
		owner[s] = "" // left out of this build: owned by no code that is built
	}
	if owner["timer"] != modulePath+"/internal/component/timer" {
		t.Fatalf("the registry says timer:// was registered by %q", owner["timer"])
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		pkg := modulePath + "/" + filepath.ToSlash(filepath.Dir(rel))
		for _, use := range schemeUses(t, path, owner) {
			own, ok := owner[use.scheme]
			if !ok || (own != "" && (pkg == own || strings.HasPrefix(pkg, own+"/"))) {
				continue
			}
			if _, allowed := schemeSwitchAllowed[rel+" "+use.scheme]; allowed {
				continue
			}
			found = append(found, rel+":"+strconv.Itoa(use.line)+": "+use.what+" on \""+use.scheme+"\"")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Errorf("%s: read the module's traits (pkg/component) instead of naming its scheme outside its folder", f)
	}
}

type schemeUse struct {
	scheme, what string
	line         int
}

// schemeUses lists the string literals of file that are compared with a scheme:
// the cases of a switch on a scheme, operands of == and != whose other side is a
// scheme, keys of a map literal with two or more scheme keys, and indexes of a map
// named after schemes. "A scheme" is an expression named so (scheme, u.Scheme,
// strings.ToLower(scheme)), except the Scheme of a net/url URL, which is a
// network protocol (https) rather than a component.
func schemeUses(t *testing.T, file string, schemes map[string]string) []schemeUse {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%s: %v", file, err)
		return nil
	}
	netURLs := netURLNames(f)
	isScheme := func(e ast.Expr) bool { return schemeExpr(e, netURLs) }
	var out []schemeUse
	add := func(e ast.Expr, what string) {
		if s, ok := stringLit(e); ok {
			if _, registered := schemes[s]; registered {
				out = append(out, schemeUse{scheme: s, what: what, line: fset.Position(e.Pos()).Line})
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SwitchStmt:
			if n.Tag != nil && isScheme(n.Tag) {
				for _, c := range n.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						add(e, "switch case")
					}
				}
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				if isScheme(n.X) {
					add(n.Y, "comparison")
				}
				if isScheme(n.Y) {
					add(n.X, "comparison")
				}
			}
		case *ast.IndexExpr:
			if isScheme(n.X) {
				add(n.Index, "map index")
			}
		case *ast.CompositeLit:
			if _, isMap := n.Type.(*ast.MapType); isMap {
				var keys []ast.Expr
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if s, ok := stringLit(kv.Key); ok {
							if _, registered := schemes[s]; registered {
								keys = append(keys, kv.Key)
							}
						}
					}
				}
				if len(keys) >= 2 {
					for _, k := range keys {
						add(k, "map key")
					}
				}
			}
		}
		return true
	})
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// schemeExpr reports whether e names a URI scheme of Helix: an identifier or
// field whose name says scheme (not the Scheme of a net/url URL), possibly
// lower-cased.
func schemeExpr(e ast.Expr, netURLs map[string]bool) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return strings.Contains(strings.ToLower(e.Name), "scheme")
	case *ast.SelectorExpr:
		if !strings.Contains(strings.ToLower(e.Sel.Name), "scheme") {
			return false
		}
		switch x := ast.Unparen(e.X).(type) {
		case *ast.Ident:
			return !netURLs[x.Name]
		case *ast.SelectorExpr:
			return x.Sel.Name != "URL" // r.URL.Scheme is the request's protocol
		}
		return true
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ToLower" && len(e.Args) == 1 {
			return schemeExpr(e.Args[0], netURLs)
		}
	}
	return false
}

// netURLNames lists the identifiers of f that hold a net/url URL: results of
// url.Parse and url.ParseRequestURI, and parameters of type *url.URL.
func netURLNames(f *ast.File) map[string]bool {
	pkg := ""
	for _, im := range f.Imports {
		if im.Path.Value == `"net/url"` {
			pkg = "url"
			if im.Name != nil {
				pkg = im.Name.Name
			}
		}
	}
	names := map[string]bool{}
	if pkg == "" {
		return names
	}
	isURLPkg := func(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == pkg }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Rhs) != 1 {
				return true
			}
			call, ok := n.Rhs[0].(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && isURLPkg(sel.X) && strings.HasPrefix(sel.Sel.Name, "Parse") {
				if id, ok := n.Lhs[0].(*ast.Ident); ok {
					names[id.Name] = true
				}
			}
		case *ast.Field:
			typ := n.Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if sel, ok := typ.(*ast.SelectorExpr); ok && isURLPkg(sel.X) && sel.Sel.Name == "URL" {
				for _, id := range n.Names {
					names[id.Name] = true
				}
			}
		}
		return true
	})
	return names
}

// The check finds the shapes it is meant to keep out, and leaves alone the
// protocols of net/url URLs and words that merely equal a scheme.
func TestSchemeUsesFindsSchemeSwitches(t *testing.T) {
	src := `package x

import "net/url"

var fresh = map[string]bool{"http-server": true, "timer": true}

var roles = map[string]string{"tool": "a role, not a scheme"}

func kind(trigger string, u *uri.URI, raw string) {
	scheme, _, _ := strings.Cut(trigger, "://")
	switch strings.ToLower(scheme) {
	case "kafka":
	}
	if u.Scheme == "direct" {
	}
	p, _ := url.Parse(raw)
	if p.Scheme == "https" || role == "tool" {
	}
}
`
	path := filepath.Join(t.TempDir(), "x.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	schemes := map[string]string{"http-server": "", "timer": "", "kafka": "", "direct": "", "https": "", "tool": ""}
	var got []string
	for _, u := range schemeUses(t, path, schemes) {
		got = append(got, strconv.Itoa(u.line)+" "+u.what+" "+u.scheme)
	}
	want := []string{"5 map key http-server", "5 map key timer", "12 switch case kafka", "14 comparison direct"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("found %q, want %q", got, want)
	}
}
