package step

import (
	"errors"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/starlang"
)

// ScriptPos returns where the text of scalar n starts in file: its first content
// line for block scalars (config moves block scalars there at load), one column past
// the quote for quoted scalars.
func ScriptPos(file string, n *yaml.Node) config.Pos {
	p := config.Pos{File: file, Line: n.Line, Col: n.Column}
	if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
		p.Col++
	}
	return p
}

// CompileScript compiles the Starlang script held by scalar n (the value of a
// `starlang:` key) with positions mapped onto the YAML file. A compile error is
// recorded in d at the exact line and column of the script; the result is then nil.
func CompileScript(d *config.Decoder, n *yaml.Node, path string) *starlang.Script {
	src := d.String(n, path)
	if n == nil || n.Kind != yaml.ScalarNode {
		return nil
	}
	if strings.TrimSpace(src) == "" {
		d.Errorf(n, path, "empty Starlang script")
		return nil
	}
	pos := ScriptPos(d.File(), n)
	s, err := starlang.Compile(pos.File, pos.Line, pos.Col, src, nil)
	if err != nil {
		d.Add(scriptError(err, pos, path))
		return nil
	}
	return s
}

// scriptError converts a starlang error ("file:line:col: msg") to a config.Error.
func scriptError(err error, fallback config.Pos, path string) *config.Error {
	var se *starlang.Error
	if errors.As(err, &se) {
		return &config.Error{Pos: parsePos(se.Pos, fallback), Path: path, Msg: "starlang: " + se.Msg}
	}
	return &config.Error{Pos: fallback, Path: path, Msg: "starlang: " + err.Error()}
}

// parsePos reads "file:line[:col]" where file is fallback.File (file names may hold
// colons, so the known file name is stripped rather than split on).
func parsePos(s string, fallback config.Pos) config.Pos {
	rest, ok := strings.CutPrefix(s, fallback.File+":")
	if !ok {
		return fallback
	}
	parts := strings.Split(rest, ":")
	line, err := strconv.Atoi(parts[0])
	if err != nil {
		return fallback
	}
	p := config.Pos{File: fallback.File, Line: line}
	if len(parts) > 1 {
		if col, err := strconv.Atoi(parts[1]); err == nil {
			p.Col = col
		}
	}
	return p
}
