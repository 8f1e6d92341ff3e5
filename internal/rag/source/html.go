package source

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skippedElements hold no readable text (or only navigation): their content is
// left out.
var skippedElements = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Nav: true, atom.Head: true,
	atom.Noscript: true, atom.Template: true, atom.Svg: true, atom.Iframe: true,
	atom.Object: true, atom.Button: true, atom.Select: true,
}

// paragraphElements end with a blank line; lineElements with a line break.
var paragraphElements = map[atom.Atom]bool{
	atom.P: true, atom.Blockquote: true, atom.Pre: true, atom.Table: true, atom.Ul: true, atom.Ol: true,
	atom.Dl: true, atom.Figure: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Hr: true, atom.Address: true,
	atom.Details: true, atom.Form: true, atom.Fieldset: true,
}

var lineElements = map[atom.Atom]bool{
	atom.Br: true, atom.Div: true, atom.Li: true, atom.Tr: true, atom.Td: true, atom.Th: true,
	atom.Dt: true, atom.Dd: true, atom.Caption: true, atom.Figcaption: true, atom.Summary: true,
	atom.Option: true, atom.Legend: true, atom.Label: true,
}

var headingLevels = map[atom.Atom]int{
	atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6,
}

// extractHTML returns an HTML page's title (its <title>, else its first <h1>)
// and its readable text: headings as
// Markdown "#" lines (so the chunker sees the outline), paragraphs separated by
// blank lines, list items, table rows and cells on lines of their own,
// whitespace collapsed outside <pre>, entities decoded. Scripts, styles,
// navigation and the head are left out. Any input gives a text: a page the
// parser refuses (it allows 512 levels of nesting) is read token by token
// instead, and warning says so.
func extractHTML(src string) (title, text, warning string) {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		title, text = extractHTMLTokens(src)
		return title, text, fmt.Sprintf("the HTML is nested too deeply to parse as a tree (%v): its text was read tag by tag, without the tree's repairs of misnested markup", err)
	}
	e := &htmlExtractor{}
	e.walk(doc)
	title = strings.Join(strings.Fields(e.title), " ")
	if title == "" {
		title = strings.Join(strings.Fields(e.h1), " ")
	}
	return title, e.finish(), ""
}

// extractHTMLTokens is extractHTML for pages the parser refuses: it follows
// the tags as they come, with no tree (so no depth limit), and gives the same
// text for well-formed markup: headings, paragraphs and lines, the skipped
// elements left out.
func extractHTMLTokens(src string) (title, text string) {
	z := html.NewTokenizer(strings.NewReader(src))
	e := &htmlExtractor{}
	skip := 0 // open skipped elements (script, style, nav …)
	inTitle := false
	h1Start := -1
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		name, _ := z.TagName()
		a := atom.Lookup(name)
		switch tt {
		case html.TextToken:
			switch {
			case inTitle:
				e.title += string(z.Text())
			case skip == 0:
				e.text(string(z.Text()))
			}
		case html.StartTagToken:
			switch {
			case a == atom.Title && e.title == "":
				inTitle = true
			case skippedElements[a] && a != atom.Head:
				skip++
			case skip > 0:
			default:
				e.open(a)
				if a == atom.H1 && e.h1 == "" {
					h1Start = e.b.Len()
				}
			}
		case html.EndTagToken:
			switch {
			case a == atom.Title:
				inTitle = false
			case skippedElements[a] && a != atom.Head:
				skip = max(skip-1, 0)
			case skip > 0:
			default:
				if a == atom.H1 && h1Start >= 0 {
					e.h1, h1Start = e.b.String()[h1Start:], -2
				}
				e.close(a)
			}
		case html.SelfClosingTagToken:
			if skip == 0 {
				e.open(a)
				e.close(a)
			}
		}
	}
	title = strings.Join(strings.Fields(e.title), " ")
	if title == "" {
		title = strings.Join(strings.Fields(e.h1), " ")
	}
	return title, e.finish()
}

// open and close are what an element's start and end tags do to the text.
func (e *htmlExtractor) open(a atom.Atom) {
	switch {
	case headingLevels[a] > 0:
		e.breakLines(2)
		e.b.WriteString(strings.Repeat("#", headingLevels[a]) + " ")
		e.newlines, e.space, e.lineStart = 0, false, true
	case paragraphElements[a]:
		e.breakLines(2)
		if a == atom.Pre {
			e.pre++
		}
	case lineElements[a]:
		e.breakLines(1)
	}
}

func (e *htmlExtractor) close(a atom.Atom) {
	switch {
	case headingLevels[a] > 0 || paragraphElements[a]:
		if a == atom.Pre && e.pre > 0 {
			e.pre--
		}
		e.breakLines(2)
	case lineElements[a]:
		e.breakLines(1)
	}
}

type htmlExtractor struct {
	title    string
	h1       string // the first h1's text, the title when there is no <title>
	b        strings.Builder
	pre      int  // depth of <pre> elements
	newlines int  // line breaks at the end of b (2 = a blank line)
	space    bool // whitespace was seen since the last word
	// lineStart: nothing but a heading's "# " on the current line yet.
	lineStart bool
}

func (e *htmlExtractor) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		e.text(n.Data)
		return
	case html.ElementNode:
		if n.DataAtom == atom.Title && e.title == "" {
			var sb strings.Builder
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					sb.WriteString(c.Data)
				}
			}
			e.title = sb.String()
			return
		}
		if n.DataAtom == atom.Head {
			// Only the title is wanted from the head.
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && c.DataAtom == atom.Title {
					e.walk(c)
				}
			}
			return
		}
		if skippedElements[n.DataAtom] {
			return
		}
		if level := headingLevels[n.DataAtom]; level > 0 {
			e.breakLines(2)
			e.b.WriteString(strings.Repeat("#", level) + " ")
			e.newlines, e.space, e.lineStart = 0, false, true
			start := e.b.Len()
			e.children(n)
			if level == 1 && e.h1 == "" {
				e.h1 = e.b.String()[start:]
			}
			e.breakLines(2)
			return
		}
	}
	switch {
	case n.Type == html.ElementNode && paragraphElements[n.DataAtom]:
		e.breakLines(2)
		if n.DataAtom == atom.Pre {
			e.pre++
			e.children(n)
			e.pre--
		} else {
			e.children(n)
		}
		e.breakLines(2)
	case n.Type == html.ElementNode && lineElements[n.DataAtom]:
		e.breakLines(1)
		e.children(n)
		e.breakLines(1)
	default:
		e.children(n)
	}
}

func (e *htmlExtractor) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		e.walk(c)
	}
}

// breakLines ends the current line and makes sure at least n line breaks
// (2: a blank line) separate it from what follows; nothing at the very start.
func (e *htmlExtractor) breakLines(n int) {
	e.space = false
	if e.b.Len() == 0 {
		return
	}
	for e.newlines < n {
		e.b.WriteByte('\n')
		e.newlines++
	}
}

func (e *htmlExtractor) text(s string) {
	if s == "" {
		return
	}
	if e.pre > 0 {
		e.b.WriteString(s)
		e.newlines, e.lineStart = 0, false
		if strings.HasSuffix(s, "\n") {
			e.newlines = 1
		}
		return
	}
	// Whitespace collapses to one space between words, also across inline
	// elements ("Hello <b>world</b>!" is "Hello world!").
	if r := []rune(s[:1]); unicode.IsSpace(r[0]) {
		e.space = true
	}
	for i, w := range strings.Fields(s) {
		if (i > 0 || e.space) && !e.lineStart && e.newlines == 0 && e.b.Len() > 0 {
			e.b.WriteByte(' ')
		}
		e.b.WriteString(w)
		e.newlines, e.space, e.lineStart = 0, false, false
	}
	if unicode.IsSpace(rune(s[len(s)-1])) {
		e.space = true
	}
}

// finish returns the text with trailing spaces removed from every line and at
// most one blank line in a row.
func (e *htmlExtractor) finish() string {
	lines := strings.Split(e.b.String(), "\n")
	out := make([]string, 0, len(lines))
	blank := 0
	for _, l := range lines {
		l = strings.TrimRightFunc(l, unicode.IsSpace)
		if l == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
