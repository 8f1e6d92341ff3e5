package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// This file recognises files that are not Helix YAML files at all — Markdown, a
// binary, an empty file, a top-level list — and says so in one message, instead of
// the YAML parser's complaint about some line in the middle.

const startHint = "a Helix file is YAML with top-level keys such as workflows:, tools: and agents:, " +
	"as examples/quickstart.yaml is"

var markdownExtensions = map[string]bool{".md": true, ".markdown": true, ".mdx": true}

// markdownByName returns the error for a file on disk named as Markdown (helix
// validate README.md). In-memory documents are judged by their content only: a
// YAML block taken from a Markdown document may carry the document's name.
func markdownByName(file string) *Error {
	if markdownExtensions[strings.ToLower(filepath.Ext(file))] {
		return markdownError(file)
	}
	return nil
}

// notYAMLText returns the error for a file that is not YAML text: a binary, text
// that is not UTF-8. nil means the YAML parser may read it.
func notYAMLText(file string, data []byte) *Error {
	if hasUnicodeBOM(data) {
		return nil // UTF-16 and UTF-32 hold NUL bytes; the YAML parser reads them
	}
	head := data[:min(len(data), 8000)]
	if bytes.IndexByte(head, 0) >= 0 {
		return &Error{Pos: Pos{File: file}, Msg: "this is a binary file, not a Helix YAML file",
			Hint: "give helix the .yaml file of your workflows"}
	}
	if !utf8.Valid(data) {
		return &Error{Pos: Pos{File: file, Line: firstInvalidUTF8Line(data)},
			Msg:  "the file is not UTF-8 text",
			Hint: "save it as UTF-8 (YAML files are UTF-8); an editor's \"save with encoding\" does it"}
	}
	return nil
}

func markdownError(file string) *Error {
	return &Error{Pos: Pos{File: file}, Msg: "this looks like Markdown, not a Helix YAML file",
		Hint: "give helix the .yaml file of your workflows: YAML copied from a document's ```yaml blocks goes in a file of its own"}
}

func hasUnicodeBOM(data []byte) bool {
	for _, bom := range [][]byte{{0xFE, 0xFF}, {0xFF, 0xFE}, {0, 0, 0xFE, 0xFF}} {
		if bytes.HasPrefix(data, bom) {
			return true
		}
	}
	return false
}

func firstInvalidUTF8Line(data []byte) int {
	line := 1
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r == utf8.RuneError && size <= 1 {
			return line
		}
		if r == '\n' {
			line++
		}
		data = data[size:]
	}
	return line
}

var (
	markdownFence   = regexp.MustCompile("(?m)^ {0,3}(```|~~~)")
	markdownLink    = regexp.MustCompile(`\[[^\]\n]+\]\([^)\s]+\)`)
	markdownHeading = regexp.MustCompile(`^#{1,6} \S`)
)

// looksLikeMarkdown reports whether text that did not load as a Helix file reads as
// Markdown: a code fence, a link, or a "# Title" first line (a YAML comment, but
// one followed by no configuration).
func looksLikeMarkdown(data []byte) bool {
	if markdownFence.Match(data) || markdownLink.Match(data) {
		return true
	}
	first, _, _ := bytes.Cut(bytes.TrimLeft(data, " \t\r\n"), []byte("\n"))
	return markdownHeading.Match(first)
}

// unparsableFile explains a file the YAML parser rejected when the file is not
// meant as YAML: Markdown, or JSON with a syntax error (located by the JSON
// parser, which says more than the YAML one). nil means yamlError explains it.
func unparsableFile(file string, data []byte) *Error {
	if looksLikeMarkdown(data) {
		return markdownError(file)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	isJSON := strings.EqualFold(filepath.Ext(file), ".json") || bytes.HasPrefix(trimmed, []byte("{"))
	if !isJSON {
		return nil
	}
	var syntaxErr *json.SyntaxError
	if err := json.Unmarshal(data, new(any)); errors.As(err, &syntaxErr) {
		return &Error{Pos: offsetPos(file, data, syntaxErr.Offset-1), Msg: "invalid JSON: " + syntaxErr.Error(),
			Hint: "JSON is read as YAML, so a JSON file works once its syntax is right: no trailing commas, keys in double quotes"}
	}
	return nil
}

// offsetPos is the line and column (in characters) of byte offset off of data.
func offsetPos(file string, data []byte, off int64) Pos {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return Pos{File: file, Line: line, Col: utf8.RuneCount(before[lineStart:]) + 1}
}

// emptyFileError is the error for a file with no YAML content at all.
func emptyFileError(file string, data []byte) *Error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{Pos: Pos{File: file}, Msg: "the file is empty", Hint: startHint}
	}
	if markdownFence.Match(data) || markdownLink.Match(data) {
		return markdownError(file) // "# Title" alone is a YAML comment like any other
	}
	return &Error{Pos: Pos{File: file}, Msg: "the file holds only comments",
		Hint: "remove the # in front of the lines to use; " + startHint}
}

// notAMapping returns the error for a document whose top level is a list or a
// plain value instead of a mapping; nil for a mapping or an empty document.
func notAMapping(file string, data []byte, doc *yaml.Node) *Error {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	pos := Pos{File: file, Line: root.Line, Col: root.Column}
	switch {
	case root.Kind == yaml.SequenceNode:
		if looksLikeMarkdown(data) && !hasMappingItem(root) {
			return markdownError(file)
		}
		return &Error{Pos: pos, Msg: "the file is a YAML list; a Helix file is a mapping with top-level keys such as workflows:, tools: and agents:",
			Hint: "if the items are workflows, write workflows: on the first line and indent the list below it"}
	case root.Kind == yaml.ScalarNode && !IsNull(root):
		if looksLikeMarkdown(data) {
			return markdownError(file)
		}
		return &Error{Pos: pos, Msg: fmt.Sprintf("the file is plain text (%s); a Helix file is a mapping with top-level keys such as workflows:, tools: and agents:", shortQuote(root.Value)),
			Hint: "examples/quickstart.yaml is a small one to start from"}
	}
	return nil
}

func hasMappingItem(seq *yaml.Node) bool {
	for _, it := range seq.Content {
		if it.Kind == yaml.MappingNode {
			return true
		}
	}
	return false
}

// shortQuote quotes the start of s, enough to recognise it.
func shortQuote(s string) string {
	const max = 40
	if first, _, cut := strings.Cut(s, "\n"); cut {
		s = first + " …"
	}
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

func isEmptyDocument(doc *yaml.Node) bool {
	return doc.Kind == yaml.DocumentNode && (len(doc.Content) == 0 || IsNull(doc.Content[0]))
}
