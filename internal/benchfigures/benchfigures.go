// Package benchfigures finds comments in Go source that state benchmark figures: a
// number with ns/op or allocs/op, a request rate, a percentage of the bytes or the
// time, "N times faster", allocations per call, how long something took (the test
// file lists examples). A measured number goes stale as soon as the code or the machine
// changes, and nothing checks it there; it belongs in BENCHMARKS.md, with the commit,
// the command and the machine it came from. A comment says why the code is the way it
// is, in words, and may point to BENCHMARKS.md for the numbers.
//
// The patterns are narrow on purpose: each needs a number next to a unit or a
// comparison that only a measurement produces, so limits, defaults, thresholds and
// goals pass. A comment that still matches
// and is no measurement goes on the caller's allow-list.
package benchfigures

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// number is a figure as comments write them: digits with decimal or thousands
// separators, maybe marked approximate.
const number = `(?:~|≈|about\s+)?\d+(?:[.,]\d+)*`

// shapes are the shapes of a measured figure, matched case-insensitively against
// a comment's text with its lines joined by spaces.
var shapes = []string{
	// Go benchmark units per operation (ns/op, B/op, allocs/op …).
	number + `\s*(?:ns|µs|us|ms|s|B|KiB|KB|MiB|MB|allocs?)/op\b`,
	// Rates: requests, records or bytes per second.
	number + `\s*[kM]?\s*(?:req|reqs|requests|ops|calls|records|rows|msgs|messages|events)/s(?:ec)?\b`,
	number + `\s*(?:B|KiB|KB|MiB|MB|GiB|GB)/s\b`,
	number + `\s*(?:rps|qps)\b`,
	`\b(?:req|reqs|ops|calls|records)/s\s+(?:of\s+)?` + number,
	// Shares and differences: a percentage of the bytes, time or CPU; N % faster.
	number + `\s?%\s+(?:faster|slower|fewer|more|less|lower|higher|better|worse|cheaper|smaller|larger|of\s+(?:the\s+|its\s+|a\s+)?(?:bytes|time|cpu|allocations?|calls?|requests?|throughput|memory|heap|wall|latency|process))`,
	`\b(?:faster|slower|cheaper|fewer|smaller|larger)\s+by\s+` + number + `\s?%`,
	// Ratios: N x faster, N × the throughput, N times as fast.
	number + `\s*(?:x|×|\s+times)\s+(?:faster|slower|fewer|more|less|cheaper|smaller|larger|as\s+(?:fast|slow|many|much|often)|the\s+(?:throughput|speed|cost|allocations|cpu|memory|latency))\b`,
	// Frequencies: N times (or collections, calls …) a second.
	number + `(?:\s*[–-]\s*` + number + `)?\s+(?:times|collections|gcs|calls|requests)\s+(?:a|per)\s+second\b`,
	// Durations someone timed: "took" or "takes" with a number and unit, or with
	// a unit alone.
	`\b(?:took|takes|taking|spent)\s+(?:only\s+)?` + number + `\s*(?:ns|µs|us|ms|s|sec|seconds?|minutes?)\b`,
	`\b(?:took|takes)\s+(?:seconds|minutes|hours)\b`,
	// Costs per unit of work: N allocations (or bytes) per call, request, op ….
	number + `\s+(?:allocations?|allocs|bytes|B|KiB|KB|MiB|MB)\s+(?:per|a|each)\s+(?:call|request|op|operation|run|iteration|exchange|message|record|tools/call)\b`,
}

// figure is every shape in one expression: one pass over a comment, and a figure
// that fits two shapes is reported once.
var figure = regexp.MustCompile(`(?i)(?:` + strings.Join(shapes, `)|(?:`) + `)`)

// mayHoldFigure is a quick test that skips the expression for most comments: every
// shape has a digit, or "took"/"takes" with a unit.
func mayHoldFigure(text string) bool {
	if strings.ContainsAny(text, "0123456789") {
		return true
	}
	lower := strings.ToLower(text)
	return strings.Contains(lower, "took") || strings.Contains(lower, "takes")
}

// Finding is one figure in a comment.
type Finding struct {
	Pos   token.Position // where the figure starts; Filename as given to Source
	Match string         // the figure's text, lines joined by spaces
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: comment states a benchmark figure %q: say why in words and keep the number in BENCHMARKS.md (with where it came from)", f.Pos, f.Match)
}

// commentRun is consecutive line comments (or one block comment) as one text, so
// that a figure broken across lines is still found.
type commentRun struct {
	text   strings.Builder
	starts []int            // offset in text where each piece starts
	pos    []token.Position // the position of each piece's first character
	end    int              // line of the last piece
}

func (r *commentRun) add(text string, pos token.Position) {
	trimmed := strings.TrimLeft(text, " \t")
	pos.Column += len(text) - len(trimmed)
	pos.Offset += len(text) - len(trimmed)
	text = strings.TrimRight(trimmed, " \t")
	if r.text.Len() > 0 {
		r.text.WriteByte(' ')
	}
	r.starts = append(r.starts, r.text.Len())
	r.pos = append(r.pos, pos)
	r.text.WriteString(text)
	r.end = pos.Line
}

// position maps an offset in the joined text back to the source.
func (r *commentRun) position(off int) token.Position {
	i := len(r.starts) - 1
	for i > 0 && r.starts[i] > off {
		i--
	}
	p := r.pos[i]
	rest := r.text.String()[r.starts[i]:off]
	if nl := strings.LastIndexByte(rest, '\n'); nl >= 0 { // inside a block comment
		p.Line += strings.Count(rest, "\n")
		p.Column = len(rest) - nl
		return p
	}
	p.Column += len(rest)
	p.Offset += len(rest)
	return p
}

func (r *commentRun) findings() []Finding {
	text := r.text.String()
	if !mayHoldFigure(text) {
		return nil
	}
	var out []Finding
	for _, m := range figure.FindAllStringIndex(text, -1) {
		out = append(out, Finding{Pos: r.position(m[0]), Match: strings.Join(strings.Fields(text[m[0]:m[1]]), " ")})
	}
	return out
}

// Source returns the figures in the comments of one Go file. The file need not
// compile: it is only tokenized, and tokens after a syntax error are still read.
func Source(filename string, src []byte) []Finding {
	fset := token.NewFileSet()
	file := fset.AddFile(filename, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, func(token.Position, string) {}, scanner.ScanComments)
	var out []Finding
	var run *commentRun
	flush := func() {
		if run != nil {
			out = append(out, run.findings()...)
			run = nil
		}
	}
	for {
		p, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.COMMENT {
			flush()
			continue
		}
		pos := fset.Position(p)
		body, skip := strings.CutPrefix(lit, "//")
		if !skip {
			body = strings.TrimSuffix(strings.TrimPrefix(lit, "/*"), "*/")
		}
		if run != nil && (!skip || pos.Line != run.end+1) {
			flush()
		}
		if run == nil {
			run = &commentRun{}
		}
		pos.Column += 2 // past the // or /*
		pos.Offset += 2
		run.add(body, pos)
		if !skip {
			flush()
		}
	}
	flush()
	return out
}

// Tree returns the figures in the comments of every .go file under root, with
// paths relative to root (slash-separated). Directories whose name starts with "."
// (.git, .tools …) or "_" are skipped, like the go command does.
func Tree(root string) ([]Finding, error) {
	var out []Finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".go") || !d.Type().IsRegular() {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		out = append(out, Source(filepath.ToSlash(rel), src)...)
		return nil
	})
	return out, err
}
