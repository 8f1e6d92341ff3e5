package chunk

import (
	"sort"
	"strings"
)

// heading is a Markdown heading and the outline in force from its offset on.
type heading struct {
	offset  int
	outline []string // outermost first, ending with this heading
}

// outline finds the Markdown headings of text: ATX ("## Title") and setext
// ("Title" underlined with "===" or "---"), outside fenced code blocks and a
// leading front matter block. HTML sources reach the chunker as text with ATX
// headings (see package source), so this covers them too.
func outline(text string) []heading {
	var out []heading
	var stack [6]string // stack[i] is the heading of level i+1 in force
	push := func(offset, level int, title string) {
		stack[level-1] = title
		for i := level; i < len(stack); i++ {
			stack[i] = ""
		}
		var o []string
		for _, h := range stack[:level] {
			if h != "" {
				o = append(o, h)
			}
		}
		out = append(out, heading{offset, o})
	}

	type line struct {
		start int
		text  string // without the line break, trailing '\r' removed
	}
	var lines []line
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		end := len(text)
		next := len(text)
		if j >= 0 {
			end = i + j
			next = end + 1
		}
		lines = append(lines, line{i, strings.TrimSuffix(text[i:end], "\r")})
		i = next
	}

	first := 0
	if len(lines) > 0 && strings.TrimSpace(lines[0].text) == "---" {
		for k := 1; k < len(lines); k++ {
			if t := strings.TrimSpace(lines[k].text); t == "---" || t == "..." {
				first = k + 1
				break
			}
		}
	}
	fence := ""
	for k := first; k < len(lines); k++ {
		l := lines[k].text
		indented := len(l)-len(strings.TrimLeft(l, " ")) > 3
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if !indented && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) {
			fence = t[:3]
			continue
		}
		if indented {
			continue
		}
		if level, title, ok := atxHeading(t); ok {
			push(lines[k].start, level, title)
			continue
		}
		// A setext underline turns the single line of prose above it into a
		// heading.
		if k > first && t != "" && (strings.Trim(t, "=") == "" || strings.Trim(t, "-") == "") {
			prev := strings.TrimSpace(lines[k-1].text)
			prevIsParagraphStart := k-1 == first || strings.TrimSpace(lines[k-2].text) == ""
			if prev != "" && prevIsParagraphStart && !isBlockLine(prev) {
				level := 1
				if t[0] == '-' {
					level = 2
				}
				push(lines[k-1].start+strings.Index(lines[k-1].text, prev), level, prev)
			}
		}
	}
	return out
}

// atxHeading parses a trimmed "## Title ##" line.
func atxHeading(t string) (level int, title string, ok bool) {
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(t) && t[level] != ' ' && t[level] != '\t') {
		return 0, "", false
	}
	title = strings.TrimSpace(t[level:])
	// A closing sequence of #s is not part of the title.
	if trimmed := strings.TrimRight(title, "#"); trimmed == "" || strings.HasSuffix(trimmed, " ") || strings.HasSuffix(trimmed, "\t") {
		title = strings.TrimSpace(trimmed)
	}
	if title == "" {
		return 0, "", false
	}
	return level, title, true
}

// headingsAt returns the outline in force at byte offset off.
func headingsAt(hs []heading, off int) []string {
	i := sort.Search(len(hs), func(i int) bool { return hs[i].offset > off })
	if i == 0 {
		return nil
	}
	return hs[i-1].outline
}
