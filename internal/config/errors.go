package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/arvenza/helix/internal/suggest"
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
	// masks is, for an error that makes a value unreadable (a missing environment
	// variable), where that value is: other errors on its line are its consequences.
	masks Pos
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

// WithoutFollowOns drops the errors that only repeat a problem already reported:
// those on the line of a value that could not be read (see [Error.masks]), other
// than the errors that say why it could not be read.
func (es Errors) WithoutFollowOns() Errors {
	masked := map[Pos]bool{}
	for _, e := range es {
		if e.masks.IsValid() {
			masked[Pos{File: e.masks.File, Line: e.masks.Line}] = true
		}
	}
	if len(masked) == 0 {
		return es
	}
	out := make(Errors, 0, len(es))
	for _, e := range es {
		if e.masks.IsValid() || !masked[Pos{File: e.Pos.File, Line: e.Pos.Line}] {
			out = append(out, e)
		}
	}
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
// or "" when none is close enough to be a plausible typo (see [suggest.Closest]).
func Suggest(word string, candidates []string) string {
	return suggest.Closest(word, candidates)
}

// DidYouMean formats Suggest's answer as a hint, "" when there is none.
func DidYouMean(word string, candidates []string) string {
	if s := Suggest(word, candidates); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return ""
}
