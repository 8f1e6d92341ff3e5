package apicheck

import (
	"fmt"
	"strings"
)

// Header opens api/helix.txt; ParseFile skips it.
const Header = `# The public Go API of Helix: every exported name of the packages under pkg/, and
# the internal types they make public. internal/apicheck fails when this differs
# from the code. To accept a deliberate change, run
#     go test ./internal/apicheck -update     (or: make apicheck UPDATE=1)
# and explain it in the changelog of docs/go-api.md.
`

// ParseFile returns the API lines of an api/helix.txt text.
func ParseFile(text string) []string {
	var out []string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// Compare returns "" when want and got (API lines) are the same set, else a message
// listing what was removed (-) and added (+), saying whether the change can break
// users, how to accept it and where to explain it.
func Compare(want, got []string) string {
	removed, added := difference(want, got), difference(got, want)
	if len(removed) == 0 && len(added) == 0 {
		return ""
	}
	var b strings.Builder
	if len(removed) > 0 {
		fmt.Fprintf(&b, "INCOMPATIBLE change to the public Go API: %d line(s) removed or changed, which can break programs using them", len(removed))
	} else {
		fmt.Fprintf(&b, "the public Go API grew (compatible): %d line(s) added", len(added))
	}
	b.WriteString(" (api/helix.txt → code):\n")
	for _, l := range removed {
		b.WriteString("  - " + l + "\n")
	}
	for _, l := range added {
		b.WriteString("  + " + l + "\n")
	}
	b.WriteString("If this is intended, accept it with\n" +
		"    go test ./internal/apicheck -update     (or: make apicheck UPDATE=1)\n" +
		"and explain it in the changelog of docs/go-api.md; otherwise restore the API " +
		"(or move the new name under internal/).")
	return b.String()
}

// difference lists the lines of a that are not in b, in a's order.
func difference(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, l := range b {
		in[l] = true
	}
	var out []string
	for _, l := range a {
		if !in[l] {
			out = append(out, l)
		}
	}
	return out
}
