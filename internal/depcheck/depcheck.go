// Package depcheck lets a test say which packages another package must not depend
// on, so that the direction of dependencies (internal/step imports no concrete
// component, internal/config is the YAML model only …) is kept by the test suite
// rather than by review. It asks `go list -deps`, which reads only import lines.
package depcheck

import (
	"bytes"
	"fmt"
	"os/exec"
	"sort"
	"strings"
)

// Graph is the import graph of a package and everything it depends on: each
// package's path mapped to the paths it imports (test files excluded).
type Graph map[string][]string

// Load runs `go list -deps` on pkg (an import path or ./dir pattern) from dir.
func Load(dir, pkg string) (Graph, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", pkg)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %v: %s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	g := Graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			g[f[0]] = f[1:]
		}
	}
	return g, nil
}

// Violation is a forbidden package reached from the root, with the import chain
// that reaches it (root first), so that the failure says which import to remove.
type Violation struct {
	Package string
	Chain   []string
}

func (v Violation) String() string { return strings.Join(v.Chain, " → ") }

// Forbidden walks the graph from root and returns every package for which
// forbidden reports true, each with the shortest import chain reaching it. The
// walk does not enter the packages in skip: neither they nor their imports are
// counted (an exception with a reason at the caller, not a hidden one).
func (g Graph) Forbidden(root string, forbidden func(path string) bool, skip ...string) []Violation {
	skipped := map[string]bool{}
	for _, s := range skip {
		skipped[s] = true
	}
	parent := map[string]string{root: ""}
	queue := []string{root}
	var out []Violation
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if skipped[p] {
			continue
		}
		if p != root && forbidden(p) {
			out = append(out, Violation{Package: p, Chain: chain(parent, p)})
			continue
		}
		for _, imp := range g[p] {
			if _, seen := parent[imp]; !seen {
				parent[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Package < out[j].Package })
	return out
}

func chain(parent map[string]string, p string) []string {
	var c []string
	for ; p != ""; p = parent[p] {
		c = append([]string{p}, c...)
	}
	return c
}

// Imports reports whether pkg imports dep directly.
func (g Graph) Imports(pkg, dep string) bool {
	for _, imp := range g[pkg] {
		if imp == dep {
			return true
		}
	}
	return false
}
