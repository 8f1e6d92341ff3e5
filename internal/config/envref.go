package config

import (
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/uri"
)

// envProblem is one ${env:…} reference of a scalar that cannot be resolved.
type envProblem struct {
	offset int    // byte offset of "${env:" in the scalar's value
	text   string // the reference as written, "${env:NAME}", or up to the end when unterminated
	msg    string
	hint   string
}

// envProblems lists every reference in s that cannot be resolved: variables that
// are not set (and have no default), empty names, a reference without its closing }.
func envProblems(s string) []envProblem {
	var out []envProblem
	for from := 0; ; {
		i := strings.Index(s[from:], "${env:")
		if i < 0 {
			return out
		}
		i += from
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return append(out, envProblem{offset: i, text: s[i:],
				msg:  fmt.Sprintf("unterminated placeholder %q", s[i:]),
				hint: "add the closing }"})
		}
		spec := s[i+len("${env:") : i+j]
		if _, err := uri.Env(spec); err != nil {
			out = append(out, describeEnvError(i, s[i:i+j+1], spec, err))
		}
		from = i + j + 1
	}
}

func describeEnvError(offset int, text, spec string, err error) envProblem {
	name, _, _ := strings.Cut(spec, ":-")
	name = strings.TrimSpace(name)
	if _, set := os.LookupEnv(name); name == "" || set {
		return envProblem{offset: offset, text: text, msg: err.Error()}
	}
	return envProblem{offset: offset, text: text,
		msg: fmt.Sprintf("environment variable %s is not set", name),
		hint: fmt.Sprintf("export %s=… before starting helix, or give a default: ${env:%s:-value}",
			name, name)}
}

// reportEnvProblems records one error per unresolvable reference of scalar n, at
// the reference itself when it can be found in the file's lines. Each error masks
// n's line: other errors there come from the unresolved text and are dropped (see
// [Errors.WithoutFollowOns]).
func reportEnvProblems(d *Decoder, n *yaml.Node, lines [][]byte) {
	for _, p := range envProblems(n.Value) {
		pos := d.Pos(n)
		nth := strings.Count(n.Value[:p.offset], p.text)
		if at, ok := findInLines(lines, pos, p.text, nth); ok {
			pos = at
		}
		d.Add(&Error{Pos: pos, Msg: p.msg, Hint: p.hint, masks: d.Pos(n)})
	}
}

// findInLines finds the nth (0-based) occurrence of text in the file from start on,
// within the lines a scalar can span. Columns count characters, as YAML's do.
func findInLines(lines [][]byte, start Pos, text string, nth int) (Pos, bool) {
	const maxScalarLines = 1000
	for ln := start.Line; ln >= 1 && ln <= len(lines) && ln < start.Line+maxScalarLines; ln++ {
		line := string(lines[ln-1])
		from := 0
		if ln == start.Line {
			from = byteOffsetOfColumn(line, start.Col)
		}
		for {
			i := strings.Index(line[from:], text)
			if i < 0 {
				break
			}
			if nth == 0 {
				return Pos{File: start.File, Line: ln, Col: utf8.RuneCountInString(line[:from+i]) + 1}, true
			}
			nth--
			from += i + len(text)
		}
	}
	return Pos{}, false
}

// byteOffsetOfColumn is the byte offset of 1-based character column col in line.
func byteOffsetOfColumn(line string, col int) int {
	off := 0
	for c := 1; c < col && off < len(line); c++ {
		_, size := utf8.DecodeRuneInString(line[off:])
		off += size
	}
	return off
}
