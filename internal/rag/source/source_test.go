package source

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/chunk"
)

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree builds a source directory with every kind of file, and a directory
// outside it that symbolic links point to.
func tree(t *testing.T) (root string) {
	base := t.TempDir()
	root = filepath.Join(base, "docs")
	outside := filepath.Join(base, "secret")
	write(t, outside, "passwords.txt", "hunter2")
	write(t, outside, "dir/more.md", "# Secret")

	write(t, root, "readme.txt", "Plain text.\n")
	write(t, root, "guide/intro.md", "---\ntitle: \"The Intro\"\nweight: 3\ndraft: false\ntags: [a, b]\n---\n# Ignored Heading\n\nBody text.\n")
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "guide/intro.md"), at, at); err != nil {
		t.Fatal(err)
	}
	write(t, root, "guide/deep/nested/notitle.markdown", "Some words.\n\n# First Heading\n\nMore.")
	write(t, root, "site/page.html", `<!doctype html><html><head><title> My  Page </title><style>p{color:red}</style><script>var x = "<p>no</p>";</script></head>
<body><nav><a href="/">Home</a></nav><h1>Main &amp; Title</h1><p>Caf&eacute; &lt;b&gt; is <b>bold</b>!</p>
<ul><li>one</li><li>two</li></ul><table><tr><td>cell 1</td><td>cell 2</td></tr></table><h2>Sub</h2><p>End&nbsp;here.</p><script>alert(1)</script></body></html>`)
	write(t, root, "data/records.jsonl", `{"id": "a", "text": "first", "title": "A", "lang": "en", "n": 2}
this is not json
{"text": "third, no id", "nested": {"x": 1}}

{"body": "no text field"}
[1, 2]
{"_id": 7, "text": "sixth"}
`)
	write(t, root, "data/one.json", `{"text": "single", "metadata": {"team": "core", "deep": {"x": 1}}}`)
	write(t, root, "data/many.json", `[{"text": "m1", "id": "x"}, {"text": "m2"}, "oops"]`)
	write(t, root, "data/broken.json", "{\n  \"text\": \"a\",\n  oops\n}")
	write(t, root, "drafts/wip.md", "# WIP")
	write(t, root, "big.txt", strings.Repeat("x", 2000))
	write(t, root, "binary.txt", "\x00\x01\x02ELF\x00\x00")
	write(t, root, "latin1.txt", "caf\xe9 cr\xe8me")
	write(t, root, "manual.pdf", "%PDF-1.4")
	write(t, root, "image.png", "\x89PNG")
	if err := os.Symlink(filepath.Join(outside, "passwords.txt"), filepath.Join(root, "escape.txt")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Symlink(filepath.Join(outside, "dir"), filepath.Join(root, "escapedir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("readme.txt", filepath.Join(root, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	return root
}

func walk(t *testing.T, s *FileSource) map[string]rag.Document {
	t.Helper()
	docs := map[string]rag.Document{}
	var order []string
	if err := s.Walk(context.Background(), func(d rag.Document) error {
		docs[d.ID] = d
		order = append(order, d.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestFilesWalk(t *testing.T) {
	root := tree(t)
	var logs bytes.Buffer
	s := Files(root, FileOptions{
		Include:      append(append([]string(nil), DefaultInclude...), "**/*.pdf"),
		Exclude:      []string{"drafts/**"},
		MaxFileBytes: 1000,
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
	})
	docs := walk(t, s)
	var ids []string
	for id := range docs {
		ids = append(ids, id)
	}
	want := []string{
		"alias.txt", "data/many.json#2", "data/many.json#x", "data/one.json",
		"data/records.jsonl#3", "data/records.jsonl#7", "data/records.jsonl#a",
		"guide/deep/nested/notitle.markdown", "guide/intro.md", "latin1.txt", "readme.txt", "site/page.html",
	}
	if !sameSet(ids, want) {
		t.Errorf("documents %q,\nwant %q", sorted(ids), want)
	}

	if d := docs["guide/intro.md"]; d.Title != "The Intro" || d.Text != "# Ignored Heading\n\nBody text.\n" ||
		!reflect.DeepEqual(d.Metadata, map[string]any{"weight": 3.0, "draft": false, "tags": []any{"a", "b"},
			"path": "guide/intro.md", "modified": "2026-03-01T09:30:00Z"}) || d.Source != "guide/intro.md" {
		t.Errorf("intro.md = %+v", d)
	}
	if d := docs["guide/deep/nested/notitle.markdown"]; d.Title != "First Heading" {
		t.Errorf("notitle.markdown title = %q", d.Title)
	}
	if d := docs["site/page.html"]; d.Title != "My Page" || d.Text != "# Main & Title\n\nCafé <b> is bold!\n\none\ntwo\n\ncell 1\ncell 2\n\n## Sub\n\nEnd here." {
		t.Errorf("page.html = %q %q", d.Title, d.Text)
	}
	if d := docs["data/records.jsonl#a"]; d.Title != "A" || d.Text != "first" || !reflect.DeepEqual(d.Metadata, map[string]any{"lang": "en", "n": 2.0, "path": "data/records.jsonl", "modified": fileTime(t, root, "data/records.jsonl")}) {
		t.Errorf("records.jsonl#a = %+v", d)
	}
	if d := docs["data/records.jsonl#3"]; d.Text != "third, no id" ||
		!reflect.DeepEqual(d.Metadata, map[string]any{"nested": map[string]any{"x": 1.0}, "path": "data/records.jsonl", "modified": fileTime(t, root, "data/records.jsonl")}) {
		t.Errorf("records.jsonl#3 = %+v", d)
	}
	if d := docs["data/one.json"]; d.Text != "single" || !reflect.DeepEqual(d.Metadata, map[string]any{"team": "core", "deep": map[string]any{"x": 1.0}, "path": "data/one.json", "modified": fileTime(t, root, "data/one.json")}) {
		t.Errorf("one.json = %+v", d)
	}
	if d := docs["latin1.txt"]; d.Text != "caf\uFFFD cr\uFFFDme" {
		t.Errorf("latin1.txt = %q", d.Text)
	}
	if docs["alias.txt"].Text != "Plain text.\n" {
		t.Errorf("alias.txt (a link inside the root) = %q", docs["alias.txt"].Text)
	}

	log := logs.String()
	for _, want := range []string{
		"records.jsonl:2", "records.jsonl:5", `has no \"text\" field`, "records.jsonl:6",
		"big.txt", "larger than the 1000 bytes allowed",
		"binary.txt", "looks binary",
		"manual.pdf", "PDF is not supported",
		"escape.txt", "broken.json", "line 3 column",
		"element 3 is a string",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "hunter2") {
		t.Error("the log shows a file outside the root")
	}
}

func TestFilesConfinement(t *testing.T) {
	root := tree(t)
	s := Files(root, FileOptions{Include: []string{"**"}, Logger: slog.New(slog.DiscardHandler)})
	_ = s.Walk(context.Background(), func(d rag.Document) error {
		if strings.Contains(d.Text, "hunter2") || strings.Contains(d.Text, "Secret") || strings.HasPrefix(d.ID, "escape") {
			t.Errorf("read %s from outside the root", d.ID)
		}
		return nil
	})
}

func TestFilesGlobs(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"a.md", "b.txt", "x/c.md", "x/y/d.md", "node_modules/e.md", "x/node_modules/f.md"} {
		write(t, root, p, "text of "+p)
	}
	for _, tc := range []struct {
		include, exclude []string
		want             []string
	}{
		{[]string{"*.md"}, nil, []string{"a.md"}},
		{[]string{"**/*.md"}, []string{"**/node_modules"}, []string{"a.md", "x/c.md", "x/y/d.md"}},
		{[]string{"x/**/*.md"}, []string{"x/node_modules/**"}, []string{"x/c.md", "x/y/d.md"}},
		{[]string{"**/?.txt", "x/*/*.md"}, nil, []string{"b.txt", "x/y/d.md", "x/node_modules/f.md"}},
	} {
		docs := walk(t, Files(root, FileOptions{Include: tc.include, Exclude: tc.exclude}))
		var ids []string
		for id := range docs {
			ids = append(ids, id)
		}
		if !sameSet(ids, tc.want) {
			t.Errorf("include %q exclude %q: %q, want %q", tc.include, tc.exclude, sorted(ids), tc.want)
		}
	}
	err := Files(root, FileOptions{Include: []string{"[a-"}}).Walk(context.Background(), func(rag.Document) error { return nil })
	if err == nil || !strings.Contains(err.Error(), `pattern "[a-" is malformed`) {
		t.Errorf("malformed pattern: %v", err)
	}
	err = Files(filepath.Join(root, "missing"), FileOptions{}).Walk(context.Background(), func(rag.Document) error { return nil })
	if err == nil {
		t.Error("a missing root gave no error")
	}
	stop := errors.New("stop")
	n := 0
	err = Files(root, FileOptions{}).Walk(context.Background(), func(rag.Document) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("fn's error: %v after %d documents", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Files(root, FileOptions{}).Walk(ctx, func(rag.Document) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled walk: %v", err)
	}
}

func TestFromBody(t *testing.T) {
	docs, err := FromBody("just some text", BodyOptions{ID: "msg-1", Source: "kafka://t"})
	if err != nil || len(docs) != 1 || docs[0].ID != "msg-1" || docs[0].Text != "just some text" || docs[0].Source != "kafka://t" {
		t.Errorf("text body: %+v %v", docs, err)
	}
	docs, _ = FromBody([]byte("just some text"), BodyOptions{})
	if len(docs) != 1 || !strings.HasPrefix(docs[0].ID, "sha256:") {
		t.Errorf("text body without id: %+v", docs)
	}
	docs, err = FromBody(`{"id": 12, "title": "T", "body": "hello", "score": 1.5, "ok": true, "metadata": {"team": "x"}}`, BodyOptions{TextField: "body"})
	if err != nil || len(docs) != 1 || docs[0].ID != "12" || docs[0].Title != "T" || docs[0].Text != "hello" ||
		!reflect.DeepEqual(docs[0].Metadata, map[string]any{"score": 1.5, "ok": true, "team": "x"}) {
		t.Errorf("object body: %+v %v", docs, err)
	}
	docs, err = FromBody([]any{map[string]any{"text": "a"}, map[string]any{"text": "b", "id": "bee"}}, BodyOptions{ID: "batch"})
	if err != nil || len(docs) != 2 || docs[0].ID != "batch#1" || docs[1].ID != "bee" {
		t.Errorf("array body: %+v %v", docs, err)
	}
	docs, err = FromBody("{\"text\": \"l1\", \"id\": \"1\"}\n\n{\"text\": \"l2\", \"id\": \"2\"}\n", BodyOptions{})
	if err != nil || len(docs) != 2 || docs[1].Text != "l2" {
		t.Errorf("JSON lines body: %+v %v", docs, err)
	}
	docs, err = FromBody("{not json at all, just braces}", BodyOptions{ID: "x"})
	if err != nil || len(docs) != 1 || docs[0].Text != "{not json at all, just braces}" {
		t.Errorf("text in braces: %+v %v", docs, err)
	}
	// Titles: from TitleField, else BodyOptions.Title; the title field is no
	// metadata.
	docs, err = FromBody(`[{"name": "Roses", "text": "prune", "title": "kept as metadata"}, {"text": "water"}]`,
		BodyOptions{TitleField: "name", Title: "Garden"})
	if err != nil || len(docs) != 2 || docs[0].Title != "Roses" || docs[1].Title != "Garden" ||
		!reflect.DeepEqual(docs[0].Metadata, map[string]any{"title": "kept as metadata"}) {
		t.Errorf("title field and default title: %+v %v", docs, err)
	}
	docs, err = FromBody("plain text", BodyOptions{ID: "m", Title: "Subject line"})
	if err != nil || docs[0].Title != "Subject line" {
		t.Errorf("text body with a title: %+v %v", docs, err)
	}
	docs, err = FromBody(`{"text": "t", "title": 2024, "id": "n"}`, BodyOptions{})
	if err != nil || docs[0].Title != "2024" || docs[0].Metadata != nil {
		t.Errorf("numeric title: %+v %v", docs, err)
	}
	docs, err = FromBody([]byte("caf\xe9"), BodyOptions{ID: "x"})
	if err != nil || docs[0].Text != "caf\uFFFD" {
		t.Errorf("bad UTF-8: %+v %v", docs, err)
	}

	for _, tc := range []struct {
		body any
		want string
	}{
		{`[{"text": "a"}, {"text": "b"}, {"body": "c"}]`, `document 3 has no "text" field; set text_field`},
		{map[string]any{"text": 5}, `field "text" is a number, not a string`},
		{[]any{"x"}, "document 1 is a string, not a JSON object"},
		{"{\"text\": \"a\"}\n{broken", "JSON lines: line 2"},
		{"  ", "the body is empty"},
		{nil, "the body is empty"},
		{42, "a body of type int cannot be ingested"},
		{[]any{}, "empty array"},
		{`[{"text": "a", "id": 1}, {"text": "b", "id": 1}]`, `documents 1 and 2 have the same id "1"`},
	} {
		_, err := FromBody(tc.body, BodyOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FromBody(%#v) = %v, want an error containing %q", tc.body, err, tc.want)
		}
	}
}

func TestExtractHTMLNeverFails(t *testing.T) {
	for _, in := range []string{"", "<", "<p>unclosed <b>bold", "\xff\xfe<h1>\x00</h1>", "<pre>  keep\n   this </pre>after", "<h3></h3>text"} {
		_, text, warning := extractHTML(in)
		_, flat := extractHTMLTokens(in)
		_, _ = text, flat
		if warning != "" {
			t.Errorf("%q: warning %q", in, warning)
		}
	}
	// Read tag by tag (the fallback for pages nested too deeply), well-formed
	// pages give the tree's text.
	for _, in := range []string{
		"<html><head><title>T</title></head><body><h1>Main</h1><p>Some <b>bold</b> text.</p><ul><li>one</li><li>two</li></ul><pre>  a\n b</pre><h2>Sub</h2><p>End.</p><script>x()</script></body></html>",
		"<div><p>para</p><div>line</div><table><tr><td>c1</td><td>c2</td></tr></table></div>",
	} {
		title, text, _ := extractHTML(in)
		ftitle, flat := extractHTMLTokens(in)
		if title != ftitle || text != flat {
			t.Errorf("%q:\ntree   %q %q\ntokens %q %q", in, title, text, ftitle, flat)
		}
	}
	if _, text, _ := extractHTML("<pre>  keep\n   this</pre><p>after  it</p>"); text != "keep\n   this\n\nafter it" {
		t.Errorf("pre: %q", text)
	}
}

func TestParseMarkdownFrontMatter(t *testing.T) {
	title, text, md := parseMarkdown("---\ntitle: 'It''s'\nauthor: Ann # comment\nurl: \"http://x#y\"\nlist:\n  - a\n---\nBody")
	if title != "It's" || text != "Body" || !reflect.DeepEqual(md, map[string]any{"author": "Ann", "url": "http://x#y", "list": []any{"a"}}) {
		t.Errorf("got %q %q %v", title, text, md)
	}
	// YAML front matter: lists, nested mappings and dates (as ISO-8601 text,
	// which compares in time order), numbers as numbers; NaN is no metadata.
	title, _, md = parseMarkdown("---\ntitle: T\ntags: [ops, billing]\nowner: {team: core, level: 2}\ndate: 2024-05-01\nat: 2024-05-01T10:00:00+02:00\nbad: .nan\n---\nBody")
	want := map[string]any{"tags": []any{"ops", "billing"}, "owner": map[string]any{"team": "core", "level": 2.0},
		"date": "2024-05-01", "at": "2024-05-01T08:00:00Z"}
	if title != "T" || !reflect.DeepEqual(md, want) {
		t.Errorf("YAML front matter: %q %#v, want %#v", title, md, want)
	}
	// Not YAML (a tab where YAML forbids one): the key: value lines still count.
	_, _, md = parseMarkdown("---\nteam: ops\n\tbroken: [\n---\nBody")
	if !reflect.DeepEqual(md, map[string]any{"team": "ops"}) {
		t.Errorf("invalid YAML front matter: %v", md)
	}
	title, text, md = parseMarkdown("---\nnot closed\n# H\n")
	if title != "H" || text != "---\nnot closed\n# H\n" || md != nil {
		t.Errorf("unclosed front matter: %q %q %v", title, text, md)
	}
}

func sameSet(a, b []string) bool {
	return reflect.DeepEqual(sorted(a), sorted(b))
}

func sorted(a []string) []string {
	out := append([]string(nil), a...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestHTMLHeadingsReachChunks: the HTML outline survives extraction as
// Markdown headings, which the chunker reports for each chunk.
func TestHTMLHeadingsReachChunks(t *testing.T) {
	root := t.TempDir()
	write(t, root, "p.html", "<h1>Top</h1><p>Intro words here.</p><h2>Child</h2><p>Child words here.</p>")
	docs := walk(t, Files(root, FileOptions{}))
	c, err := chunk.New(chunk.Config{Size: 4, Overlap: chunk.NoOverlap}, nil)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := c.Chunk(context.Background(), docs["p.html"])
	if err != nil {
		t.Fatal(err)
	}
	last := chunks[len(chunks)-1]
	if last.Text != "Child words here." || !reflect.DeepEqual(last.Headings, []string{"Top", "Child"}) {
		t.Errorf("last chunk = %q under %q", last.Text, last.Headings)
	}
}

func TestTitles(t *testing.T) {
	root := t.TempDir()
	write(t, root, "h1.html", "<html><body><p>Intro</p><h1>Main <em>Title</em>\n here</h1><h1>Second</h1><p>Text.</p></body></html>")
	write(t, root, "none.html", "<html><body><h2>Only a subheading</h2><p>Text.</p></body></html>")
	write(t, root, "both.html", "<html><head><title>Page title</title></head><body><h1>Heading</h1></body></html>")
	write(t, root, "front.md", "---\ntitle: From front matter\n---\n# Heading\n\nText.")
	write(t, root, "heading.md", "Intro.\n\n```\n# not a heading\n```\n\n# The Heading #\n\nText.")
	write(t, root, "plain.txt", "# Not a title in a text file\n\nText.")
	write(t, root, "records.jsonl", `{"id": "1", "headline": "Roses", "text": "prune", "title": "meta"}
{"id": "2", "text": "water"}
`)
	docs := walk(t, Files(root, FileOptions{TitleField: "headline"}))
	for id, want := range map[string]string{
		"h1.html": "Main Title here", "none.html": "", "both.html": "Page title",
		"front.md": "From front matter", "heading.md": "The Heading", "plain.txt": "",
		"records.jsonl#1": "Roses", "records.jsonl#2": "",
	} {
		if d, ok := docs[id]; !ok || d.Title != want {
			t.Errorf("%s: title %q, want %q", id, d.Title, want)
		}
	}
	if md := docs["records.jsonl#1"].Metadata; md["title"] != "meta" {
		t.Errorf("with title_field headline, the record's title field is metadata: %v", md)
	}
}

func TestDeeplyNestedHTMLIsIngestedWithAWarning(t *testing.T) {
	root := t.TempDir()
	const depth = 100_000
	page := "<html><head><title>Deep</title></head><body><h1>Top</h1><p>shallow text</p>" +
		strings.Repeat("<div>", depth) + "<p>deep text</p><script>hidden()</script>" + strings.Repeat("</div>", depth) +
		"<p>after the depths</p></body></html>"
	write(t, root, "deep.html", page)
	var logs bytes.Buffer
	docs := walk(t, Files(root, FileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	d, ok := docs["deep.html"]
	if !ok {
		t.Fatalf("deep.html was not read: %v", docs)
	}
	for _, want := range []string{"# Top", "shallow text", "deep text", "after the depths"} {
		if !strings.Contains(d.Text, want) {
			t.Errorf("the text of deeply nested HTML lacks %q: %.200q", want, d.Text)
		}
	}
	if strings.Contains(d.Text, "hidden") || d.Title != "Deep" {
		t.Errorf("title %q, text %.200q", d.Title, d.Text)
	}
	if !strings.Contains(logs.String(), "deep.html") || !strings.Contains(logs.String(), "nested too deeply") {
		t.Errorf("no warning about the nesting: %s", logs.String())
	}
}

func TestEmptyDocumentsWarn(t *testing.T) {
	root := t.TempDir()
	write(t, root, "empty.txt", "")
	write(t, root, "blank.md", "  \n\n\t\n")
	write(t, root, "nothing.html", "<html><head><script>x()</script></head><body> </body></html>")
	write(t, root, "full.txt", "some text")
	var logs bytes.Buffer
	docs := walk(t, Files(root, FileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	if len(docs) != 4 {
		t.Fatalf("documents %v: an empty document is still a document (its old chunks must go)", docs)
	}
	for _, name := range []string{"empty.txt", "blank.md", "nothing.html"} {
		if !regexp.MustCompile(`msg="rag source: the document has no text[^\n]*file=` + regexp.QuoteMeta(name)).MatchString(logs.String()) {
			t.Errorf("no warning about empty %s:\n%s", name, logs.String())
		}
	}
	if strings.Contains(logs.String(), "full.txt") {
		t.Errorf("a warning about a document with text: %s", logs.String())
	}
}

// Documents name their files relative to the source directory, whatever the
// directory is called (here through a symbolic link) and wherever a link
// inside it points: never an absolute path or a link's target.
func TestSourcePathsAreRelativeToTheRoot(t *testing.T) {
	real := tree(t)
	link := filepath.Join(t.TempDir(), "linked-docs")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	var logs bytes.Buffer
	docs := walk(t, Files(link, FileOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	for id, d := range docs {
		file, _, _ := strings.Cut(id, "#")
		if d.Source != file {
			t.Errorf("%s: source %q, want %q", id, d.Source, file)
		}
	}
	if docs["alias.txt"].Source != "alias.txt" {
		t.Errorf("a link inside the root is named by its target: %q", docs["alias.txt"].Source)
	}
	if len(docs) == 0 {
		t.Fatal("no documents")
	}
	if strings.Contains(logs.String(), real) || strings.Contains(logs.String(), "secret") {
		t.Errorf("the log shows where the root or a link really is: %s", logs.String())
	}
}

// fileTime is the modified metadata of root/rel: its modification time, UTC, RFC 3339.
func fileTime(t *testing.T, root, rel string) string {
	t.Helper()
	st, err := os.Stat(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime().UTC().Truncate(time.Second).Format(time.RFC3339)
}
