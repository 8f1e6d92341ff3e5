package config

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a configuration file. Lines and columns are 1-based; a zero
// Line means "the file as a whole".
type Pos struct {
	File      string
	Line, Col int
}

// String renders "helix.yaml:12:9" (or just the file name when Line is 0).
func (p Pos) String() string {
	switch {
	case p.Line == 0 && p.File == "":
		return "-"
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// IsValid reports whether p points at a line.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Error is one configuration problem: where it is (Pos and the YAML Path such as
// workflows[0].steps[2]), what is wrong (Msg) and, when we can tell, what to do (Hint).
type Error struct {
	Pos  Pos
	Path string
	Msg  string
	Hint string
}

// Error renders `helix.yaml:12:9: workflows[0].steps[2]: unknown step "tranform" (did you mean "transform"?)`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Errors is every problem found in a configuration. Loading and building never stop
// at the first problem, so that one run of `helix validate` shows them all.
type Errors []*Error

// Error prints one error per line, sorted by file, line and column.
func (es Errors) Error() string {
	sorted := es.Sorted()
	lines := make([]string, len(sorted))
	for i, e := range sorted {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Sorted returns a copy ordered by file, line, column, then message.
func (es Errors) Sorted() Errors {
	out := append(Errors(nil), es...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Pos, out[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return out[i].Msg < out[j].Msg
	})
	return out
}

// Err returns es as an error, or nil when es is empty (a nil Errors stored in an error
// interface would not be nil).
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// AsErrors extracts configuration errors from err: an Errors or *Error is returned as
// is; any other error becomes one Error at pos/path. A nil err gives nil.
func AsErrors(err error, pos Pos, path string) Errors {
	switch e := err.(type) {
	case nil:
		return nil
	case Errors:
		return e
	case *Error:
		return Errors{e}
	}
	return Errors{{Pos: pos, Path: path, Msg: err.Error()}}
}

// Suggest returns the candidate closest to word by edit distance (case-insensitive),
// or "" when none is close enough to be a plausible typo.
func Suggest(word string, candidates []string) string {
	best, bestD := "", -1
	lw := strings.ToLower(word)
	for _, c := range candidates {
		d := editDistance(lw, strings.ToLower(c))
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	// Allow roughly one typo per three letters, at least one and at most three.
	limit := min(max(len(word)/3, 1), 3)
	if bestD < 0 || bestD > limit || bestD == len(word) {
		return ""
	}
	return best
}

// DidYouMean formats Suggest's answer as a hint, "" when there is none.
func DidYouMean(word string, candidates []string) string {
	if s := Suggest(word, candidates); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return ""
}

// editDistance is the optimal-string-alignment distance: insertions, deletions,
// substitutions and swaps of adjacent letters (the commonest typo, "kafak") cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
