package source

import (
	"strconv"
	"strings"
)

// parseMarkdown splits a Markdown file into its front matter (a leading block
// of "key: value" lines between "---" lines; values that read as booleans or
// numbers become those, quotes are removed, lists and nested maps are left
// out) and its text. The title is the front matter's "title", else the first
// level-1 ATX heading.
func parseMarkdown(src string) (title, text string, metadata map[string]any) {
	text = src
	if fm, rest, ok := cutFrontMatter(src); ok {
		text = rest
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
