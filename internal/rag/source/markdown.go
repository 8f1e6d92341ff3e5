package source

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// parseMarkdown splits a Markdown file into its front matter (a leading YAML
// mapping between "---" lines: see yamlFrontMatter; when it is not valid YAML,
// its "key: value" lines, values that read as booleans or numbers becoming
// those, quotes removed) and its text. The title is the front matter's "title", else the first
// level-1 ATX heading.
func parseMarkdown(src string) (title, text string, metadata map[string]any) {
	text = src
	if fm, rest, ok := cutFrontMatter(src); ok {
		text = rest
		if t, md, ok := yamlFrontMatter(fm); ok {
			title, metadata = t, md
			if title == "" {
				title = firstHeading(text)
			}
			return title, text, metadata
		}
		// Not valid YAML: the lines that read as "key: value" still count.
		for _, line := range strings.Split(fm, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '-' {
				continue // blank, nested, comment or list item
			}
			k, v, ok := strings.Cut(line, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || v == "" || v[0] == '[' || v[0] == '{' || v == "|" || v == ">" {
				continue
			}
			if i := strings.Index(v, " #"); i >= 0 && v[0] != '"' && v[0] != '\'' {
				v = strings.TrimSpace(v[:i])
			}
			if k == "title" {
				title = unquote(v)
				continue
			}
			if metadata == nil {
				metadata = map[string]any{}
			}
			metadata[k] = scalar(v)
		}
	}
	if title == "" {
		title = firstHeading(text)
	}
	return title, text, metadata
}

// cutFrontMatter returns the front matter block and the text after it.
func cutFrontMatter(src string) (fm, rest string, ok bool) {
	first, after, found := strings.Cut(src, "\n")
	if !found || strings.TrimRight(first, " \t\r") != "---" {
		return "", src, false
	}
	for off := 0; off < len(after); {
		end := strings.IndexByte(after[off:], '\n')
		next := len(after)
		if end >= 0 {
			next = off + end + 1
		} else {
			end = len(after) - off
		}
		line := strings.TrimRight(after[off:off+end], " \t\r")
		if line == "---" || line == "..." {
			return after[:off], after[next:], true
		}
		off = next
	}
	return "", src, false
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"') {
		if s, err := strconv.Unquote(v); err == nil {
			return s
		}
		return v[1 : len(v)-1]
	}
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	return v
}

func scalar(v string) any {
	if v[0] == '"' || v[0] == '\'' {
		return unquote(v)
	}
	switch v {
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "xXnN_") {
		return f
	}
	return v
}

// firstHeading returns the text of the first "# " heading outside code fences.
func firstHeading(text string) string {
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if !fenced && strings.HasPrefix(t, "# ") {
			return strings.TrimSpace(strings.TrimRight(t[2:], "#"))
		}
	}
	return ""
}

// maxFrontMatterBytes bounds the front matter parsed as YAML (a larger block
// is read line by line): YAML's aliases make small texts expand hugely.
const maxFrontMatterBytes = 64 << 10

// yamlFrontMatter reads front matter as the YAML mapping it is: "title" is the
// title, every other key metadata — lists (tags: [a, b]) and nested mappings
// included, dates as ISO-8601 text so that ranges compare. ok is false when
// fm is not a YAML mapping.
func yamlFrontMatter(fm string) (title string, metadata map[string]any, ok bool) {
	if len(fm) > maxFrontMatterBytes || strings.TrimSpace(fm) == "" {
		return "", nil, false
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(fm), &m); err != nil || m == nil {
		return "", nil, false
	}
	for k, v := range m {
		if k == "title" {
			title, _ = scalarString(yamlPlain(v, 0))
			continue
		}
		if x, ok := metadataOf(yamlPlain(v, 0), 0); ok {
			if metadata == nil {
				metadata = map[string]any{}
			}
			metadata[k] = x
		}
	}
	return title, metadata, true
}

// yamlPlain turns what YAML decodes into interface{} into JSON-like values:
// timestamps become ISO-8601 text (a date alone stays a date), mappings with
// non-string keys take their keys' text; anything deeper than
// MaxMetadataDepth is dropped.
func yamlPlain(v any, depth int) any {
	if depth > MaxMetadataDepth {
		return nil
	}
	switch t := v.(type) {
	case time.Time:
		if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 && t.Location() == time.UTC {
			return t.Format(time.DateOnly)
		}
		return t.UTC().Format(time.RFC3339Nano)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = yamlPlain(e, depth+1)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = yamlPlain(e, depth+1)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = yamlPlain(e, depth+1)
		}
		return out
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil // .nan and .inf cannot be compared: not metadata
		}
	}
	return v
}
