package chunk

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// abbreviations end with a period that does not end a sentence (lower case,
// without their final period). "etc." is left out on purpose: it ends
// sentences at least as often as it sits inside one.
var abbreviations = map[string]bool{
	"e.g": true, "i.e": true, "cf": true, "vs": true, "al": true, "approx": true,
	"dr": true, "mr": true, "mrs": true, "ms": true, "prof": true, "sr": true, "jr": true, "st": true,
	"fig": true, "figs": true, "eq": true, "eqs": true, "no": true, "nos": true, "vol": true, "vols": true,
	"p": true, "pp": true, "ch": true, "sec": true, "ref": true, "refs": true, "ed": true, "eds": true,
	"inc": true, "ltd": true, "co": true, "corp": true, "dept": true, "univ": true, "gen": true, "col": true,
	"jan": true, "feb": true, "mar": true, "apr": true, "jun": true, "jul": true, "aug": true,
	"sep": true, "sept": true, "oct": true, "nov": true, "dec": true,
	"u.s": true, "u.k": true, "a.m": true, "p.m": true, "ph.d": true, "et al": true,
}

// sentences cuts sp into trimmed sentences. Blank lines always end a sentence,
// and so does a line break before or after a Markdown block line (heading, list
// item, quote, table row), so that headings and list items stand alone. Inside
// running text a sentence ends after '.', '!', '?' or '…' (with any closing
// quotes or brackets) followed by whitespace and an upper-case letter, a digit
// or an opening quote or bracket — unless the period ends a known
// abbreviation ("e.g.", "Dr.", "Fig.", "et al.") or an initial ("J. Smith").
// CJK full stops ("。", "！", "？") end a sentence without a following space.
// Decimals ("3.14") never split since no space follows their period.
func sentences(s string, sp span) []span {
	var out []span
	for _, para := range splitAtBlankLines(s, sp) {
		for _, block := range markdownBlocks(s, para) {
			out = appendSentences(out, s, block)
		}
	}
	return out
}

// markdownBlocks cuts a paragraph at line breaks that border a Markdown block
// line; hard-wrapped prose stays in one piece.
func markdownBlocks(s string, sp span) []span {
	lines := splitAtLineBreaks(s, sp)
	if len(lines) <= 1 {
		return lines
	}
	var out []span
	cur := lines[0]
	for _, l := range lines[1:] {
		if isBlockLine(s[cur.start:cur.end]) || isBlockLine(s[l.start:l.end]) {
			out = append(out, cur)
			cur = l
			continue
		}
		cur.end = l.end
	}
	return append(out, cur)
}

// isBlockLine reports whether a trimmed line starts a Markdown block that is not
// running prose: a heading, a list item, a quote, a table row, a fence.
func isBlockLine(line string) bool {
	if line == "" {
		return false
	}
	switch line[0] {
	case '#', '>', '|':
		return true
	case '-', '*', '+':
		return len(line) == 1 || line[1] == ' ' || line[1] == '\t' || strings.Trim(line, string(line[0])) == ""
	case '`', '~':
		return strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~")
	case '=':
		return strings.Trim(line, "= \t") == ""
	}
	i := 0
	for i < len(line) && i < 9 && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(line) && (line[i] == '.' || line[i] == ')') && (line[i+1] == ' ' || line[i+1] == '\t')
}

func isCloser(r rune) bool {
	return strings.ContainsRune("\"')]}”’»」』", r)
}

func isOpener(r rune) bool {
	return strings.ContainsRune("\"'([{“‘«「『¿¡", r)
}

// appendSentences appends the sentences of one block of running text.
func appendSentences(out []span, s string, sp span) []span {
	start := sp.start
	i := sp.start
	for i < sp.end {
		r, n := utf8.DecodeRuneInString(s[i:sp.end])
		termAt := i
		i += n
		cjk := r == '。' || r == '！' || r == '？'
		if !cjk && r != '.' && r != '!' && r != '?' && r != '…' {
			continue
		}
		// Runs of terminators ("?!", "...") and closing quotes or brackets
		// belong to the sentence they end.
		for i < sp.end {
			r2, n2 := utf8.DecodeRuneInString(s[i:sp.end])
			if !strings.ContainsRune(".!?…。！？", r2) && !isCloser(r2) {
				break
			}
			i += n2
		}
		if !cjk {
			next := i
			for next < sp.end {
				r2, n2 := utf8.DecodeRuneInString(s[next:sp.end])
				if !isSpace(r2) {
					break
				}
				next += n2
			}
			if next == i || next >= sp.end {
				continue // no space after it, or the block ends anyway
			}
			nr, _ := utf8.DecodeRuneInString(s[next:sp.end])
			if !(unicode.IsUpper(nr) || unicode.IsDigit(nr) || isOpener(nr) || (unicode.IsLetter(nr) && !unicode.IsLower(nr))) {
				continue
			}
			if r == '.' && i == termAt+1 && endsWithAbbreviation(s[start:termAt]) {
				continue
			}
		}
		if p := trim(s, span{start, i}); p.start < p.end {
			out = append(out, p)
		}
		start = i
	}
	if p := trim(s, span{start, sp.end}); p.start < p.end {
		out = append(out, p)
	}
	return out
}

// endsWithAbbreviation reports whether the text before a period ends with an
// abbreviation or a single-letter initial.
func endsWithAbbreviation(before string) bool {
	j := len(before)
	for j > 0 {
		r, n := utf8.DecodeLastRuneInString(before[:j])
		if !unicode.IsLetter(r) && r != '.' {
			break
		}
		j -= n
	}
	word := before[j:]
	if word == "" {
		return false
	}
	if utf8.RuneCountInString(word) == 1 {
		r, _ := utf8.DecodeRuneInString(word)
		return unicode.IsUpper(r)
	}
	lw := strings.ToLower(word)
	if abbreviations[lw] {
		return true
	}
	// "et al."
	if lw == "al" && strings.HasSuffix(strings.ToLower(strings.TrimRight(before[:j], " ")), "et") {
		return true
	}
	// Dotted abbreviations not in the list ("U.S.A", "e.g" written "E.g").
	return strings.Contains(lw, ".") && len(lw) <= 6
}
