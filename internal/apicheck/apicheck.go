// Package apicheck lists the exported Go API of Helix's public packages (everything
// under pkg/) as sorted text lines, so that a test can compare it with the checked-in
// api/helix.txt and make every change of the public API a deliberate, reviewed one.
//
// Each line is one element: a constant with its value, a variable, a function, a
// type, a struct field, an interface method or a method, with its full signature.
// A public name that is an alias of an internal type, or a signature that mentions an
// internal type, makes that internal type public too (a user can call its methods and
// set its fields), so such types are listed as well, under the internal package's path.
package apicheck

import (
	"fmt"
	"go/constant"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Module is the module path whose pkg/ packages are public and internal/ ones are not.
const Module = "github.com/arvenza/helix"

// Describe loads the packages matching patterns (run in dir) and returns their API
// lines, sorted. Loading uses compiled export data, so it costs a build of the
// packages (cached), not a type check of their dependencies from source.
func Describe(dir string, patterns ...string) ([]string, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedImports,
		Dir:  dir,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("loading %v: %w", patterns, err)
	}
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("loading %v:\n%s", patterns, strings.Join(errs, "\n"))
	}
	d := newDescriber()
	for _, p := range pkgs {
		if isInternal(p.PkgPath) || strings.Contains(p.PkgPath, "/testdata/") {
			continue
		}
		d.pkg(p.Types)
	}
	d.reachable()
	return d.sorted(), nil
}

// describer accumulates the lines, and the internal types the public API exposes.
type describer struct {
	lines   map[string]bool
	exposed map[*types.TypeName]bool // internal named types still to describe or described
	queue   []*types.TypeName
}

func newDescriber() *describer {
	return &describer{lines: map[string]bool{}, exposed: map[*types.TypeName]bool{}}
}

func (d *describer) sorted() []string {
	out := make([]string, 0, len(d.lines))
	for l := range d.lines {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

func (d *describer) add(pkgPath, format string, args ...any) {
	d.lines[short(pkgPath)+", "+fmt.Sprintf(format, args...)] = true
}

// pkg describes every exported package-level object of p.
func (d *describer) pkg(p *types.Package) {
	scope := p.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			d.add(p.Path(), "const %s %s = %s", name, d.typ(obj.Type()), constValue(obj.Val()))
		case *types.Var:
			d.add(p.Path(), "var %s %s", name, d.typ(obj.Type()))
		case *types.Func:
			d.add(p.Path(), "func %s%s", name, d.signature(obj.Type().(*types.Signature)))
		case *types.TypeName:
			d.typeName(p.Path(), obj)
		}
	}
}

// typeName describes a type declared in pkgPath: its kind, then its fields and
// methods. An alias lists the fields and methods of what it names, since those are
// what a user of the alias gets.
func (d *describer) typeName(pkgPath string, obj *types.TypeName) {
	name := obj.Name()
	if obj.IsAlias() {
		d.add(pkgPath, "type %s = %s", name, d.typ(types.Unalias(obj.Type())))
		if named, ok := types.Unalias(obj.Type()).(*types.Named); ok && named.Obj().Pkg() != nil && isInternal(named.Obj().Pkg().Path()) {
			// The target is described under its own path (reachable); its
			// members are reached through this alias only.
			return
		}
		if named, ok := types.Unalias(obj.Type()).(*types.Named); ok {
			d.members(pkgPath, name, named)
		}
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		return
	}
	d.add(pkgPath, "type %s%s %s", name, typeParams(named.TypeParams(), d), kind(named.Underlying()))
	d.members(pkgPath, name, named)
}

// members lists the exported fields (struct), methods (interface) and methods
// (method set of *T, which includes T's) of named under the name typeName.
func (d *describer) members(pkgPath, typeName string, named *types.Named) {
	switch u := named.Underlying().(type) {
	case *types.Struct:
		for f := range u.Fields() {
			if f.Exported() {
				embedded := ""
				if f.Embedded() {
					embedded = "embedded "
				}
				d.add(pkgPath, "type %s struct, %s%s %s", typeName, embedded, f.Name(), d.typ(f.Type()))
			}
		}
	case *types.Interface:
		for m := range u.Methods() {
			if m.Exported() {
				d.add(pkgPath, "type %s interface, %s%s", typeName, m.Name(), d.signature(m.Type().(*types.Signature)))
			}
		}
		return
	case *types.Signature:
		d.add(pkgPath, "type %s func%s", typeName, d.signature(u))
	case *types.Map, *types.Slice, *types.Array, *types.Chan, *types.Pointer:
		d.typ(u)
	}
	ms := types.NewMethodSet(types.NewPointer(named))
	for sel := range ms.Methods() {
		m := sel.Obj().(*types.Func)
		if !m.Exported() {
			continue
		}
		recv := "*" + typeName
		if _, isPtr := m.Type().(*types.Signature).Recv().Type().(*types.Pointer); !isPtr {
			recv = typeName
		}
		if len(sel.Index()) > 1 {
			recv += " (promoted)"
		}
		d.add(pkgPath, "method (%s) %s%s", recv, m.Name(), d.signature(m.Type().(*types.Signature)))
	}
}

// reachable describes the internal types the public API exposes, and those their
// fields and methods expose in turn.
func (d *describer) reachable() {
	for len(d.queue) > 0 {
		obj := d.queue[0]
		d.queue = d.queue[1:]
		d.typeName(obj.Pkg().Path(), obj)
	}
}

// typ writes t with package-qualified names, noting every internal named type in it.
func (d *describer) typ(t types.Type) string {
	d.note(t)
	return types.TypeString(t, qualifier)
}

// signature writes s without its parameter names, which callers do not depend on
// (renaming one is no API change).
func (d *describer) signature(s *types.Signature) string {
	d.note(s)
	unnamed := types.NewSignatureType(nil, nil, nil, unnamedTuple(s.Params()), unnamedTuple(s.Results()), s.Variadic())
	return strings.TrimPrefix(types.TypeString(unnamed, qualifier), "func")
}

func unnamedTuple(t *types.Tuple) *types.Tuple {
	var vars []*types.Var
	for v := range t.Variables() {
		vars = append(vars, types.NewParam(v.Pos(), v.Pkg(), "", v.Type()))
	}
	return types.NewTuple(vars...)
}

// note queues the internal named types t mentions, walking into composite types.
func (d *describer) note(t types.Type) {
	switch t := t.(type) {
	case *types.Alias:
		d.note(types.Unalias(t))
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() != nil && isInternal(obj.Pkg().Path()) && obj.Exported() && !d.exposed[obj] {
			d.exposed[obj] = true
			d.queue = append(d.queue, obj)
		}
		for a := range t.TypeArgs().Types() {
			d.note(a)
		}
	case *types.Pointer:
		d.note(t.Elem())
	case *types.Slice:
		d.note(t.Elem())
	case *types.Array:
		d.note(t.Elem())
	case *types.Map:
		d.note(t.Key())
		d.note(t.Elem())
	case *types.Chan:
		d.note(t.Elem())
	case *types.Signature:
		for v := range t.Params().Variables() {
			d.note(v.Type())
		}
		for v := range t.Results().Variables() {
			d.note(v.Type())
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() {
				d.note(f.Type())
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if m.Exported() {
				d.note(m.Type())
			}
		}
	}
}

func typeParams(tps *types.TypeParamList, d *describer) string {
	if tps.Len() == 0 {
		return ""
	}
	var parts []string
	for tp := range tps.TypeParams() {
		parts = append(parts, tp.Obj().Name()+" "+d.typ(tp.Constraint()))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// kind is how a type line ends: "struct", "interface", or the underlying type.
func kind(u types.Type) string {
	switch u.(type) {
	case *types.Struct:
		return "struct"
	case *types.Interface:
		return "interface"
	case *types.Signature:
		return "func"
	}
	return types.TypeString(u, qualifier)
}

func constValue(v constant.Value) string {
	return v.ExactString()
}

// qualifier names this module's packages by their path inside the module and
// others by their full import path.
func qualifier(p *types.Package) string { return short(p.Path()) }

func short(path string) string {
	if rest, ok := strings.CutPrefix(path, Module+"/"); ok {
		return rest
	}
	return path
}

func isInternal(path string) bool {
	return strings.HasPrefix(path, Module+"/internal/") || strings.Contains(path, "/internal/") && strings.HasPrefix(path, Module)
}
