// Package source loads the documents a RAG pipeline ingests: from a directory
// (a pipeline's file:// source) with [Files], or from a workflow's body (a
// rag-ingest step) with [FromBody].
package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/rag"
)

// DefaultInclude are the files a directory source reads when FileOptions.Include
// is empty.
var DefaultInclude = []string{"**/*.txt", "**/*.md", "**/*.markdown", "**/*.html", "**/*.htm", "**/*.json", "**/*.jsonl"}

// DefaultMaxFileBytes is the largest file read when FileOptions.MaxFileBytes is 0.
const DefaultMaxFileBytes = 32 << 20

// FileOptions configures a directory source.
type FileOptions struct {
	// Include are glob patterns of the files to read, relative to the root,
	// with forward slashes; "**" matches any number of directories ("**/*.md":
	// every Markdown file, "*.md": those at the top only). Empty means
	// DefaultInclude.
	Include []string
	// Exclude are patterns of files (or directories, with everything under
	// them) to leave out, e.g. "drafts/**" or "**/node_modules".
	Exclude []string
	// TextField is the field of .json and .jsonl records holding the text;
	// "" means "text".
	TextField string
	// TitleField is the field of .json and .jsonl records holding the title;
	// "" means "title". (Markdown files take theirs from the front matter's
	// "title" or the first "# " heading, HTML pages from <title> or the first
	// <h1>; text files have none.)
	TitleField string
	// MaxFileBytes: larger files are skipped with a warning; 0 means 32 MiB.
	MaxFileBytes int64
	// Logger receives the warnings about skipped files and records; nil means
	// slog.Default().
	Logger *slog.Logger
}

// FileSource reads the documents of a directory tree.
type FileSource struct {
	root string
	opts FileOptions
}

// Files returns the source of the documents under root.
//
// A document's ID is its file's path relative to root with forward slashes;
// a .json array or a .jsonl file gives a document per record, with ID
// "path#<the record's _id or id>", or "path#<line>" (.jsonl) or
// "path#<position from 1>" (.json) when it has none.
//
// Reading never leaves root: the walk does not enter symbolic links to
// directories (inside root or not), and a symbolic link to a file is read only
// when its target is inside root. Files are read as UTF-8 (invalid bytes become
// U+FFFD); a file that looks binary (a NUL byte, or mostly control characters
// or invalid UTF-8, in its first 8 KiB) is skipped with a warning whatever its
// extension. PDF files are not supported: they are skipped with a warning when
// an include pattern selects them.
func Files(root string, opts FileOptions) *FileSource {
	if len(opts.Include) == 0 {
		opts.Include = DefaultInclude
	}
	if opts.TextField == "" {
		opts.TextField = DefaultTextField
	}
	if opts.TitleField == "" {
		opts.TitleField = DefaultTitleField
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &FileSource{root: root, opts: opts}
}

// Walk calls fn with every document, in lexical order of paths, and stops at
// fn's first error, which it returns. Files that cannot be read or parsed are
// skipped with a warning; the walk fails only when the root cannot be read, a
// pattern is malformed or ctx ends.
func (s *FileSource) Walk(ctx context.Context, fn func(rag.Document) error) error {
	return s.files(ctx, func(fsys fs.FS, p string) error {
		docs, err := s.read(fsys, p)
		if err != nil {
			s.warn("skipped", p, err)
			return nil
		}
		for _, doc := range docs {
			if err := fn(doc); err != nil {
				return err
			}
		}
		return nil
	})
}

// files calls fn with every file the source reads (included, not excluded,
// regular or a link to a file inside root), in lexical order of paths.
func (s *FileSource) files(ctx context.Context, fn func(fsys fs.FS, p string) error) error {
	for _, p := range append(append([]string(nil), s.opts.Include...), s.opts.Exclude...) {
		if err := checkPattern(p); err != nil {
			return err
		}
	}
	root, err := os.OpenRoot(s.root)
	if err != nil {
		return fmt.Errorf("source %s: %w", s.root, err)
	}
	defer root.Close()
	fsys := root.FS()
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if p == "." {
				return fmt.Errorf("source %s: %w", s.root, err)
			}
			s.warn("cannot read, skipped", p, err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == "." {
			return nil
		}
		if d.IsDir() {
			if matchAny(s.opts.Exclude, p) {
				return fs.SkipDir
			}
			return nil
		}
		if !matchAny(s.opts.Include, p) || matchAny(s.opts.Exclude, p) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// Opening through root follows the link only to a target inside
			// root; a link to a directory is not walked.
			info, err := fs.Stat(fsys, p)
			if err != nil {
				s.warn("symbolic link leads outside the source directory or nowhere, skipped", p, err)
				return nil
			}
			if info.IsDir() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		return fn(fsys, p)
	})
}

func (s *FileSource) warn(msg, p string, err error) {
	if err == nil {
		s.opts.Logger.Warn("rag source: "+msg, "file", s.display(p))
		return
	}
	s.opts.Logger.Warn("rag source: "+msg, "file", s.display(p), "error", err)
}

// display is how a file is named in logs and in documents' Source: its path
// relative to the root, with forward slashes. Never the root's own path, nor
// where a symbolic link leads: callers of a query see where a passage is in
// the collection, not where the collection is on the server's disk.
func (s *FileSource) display(p string) string {
	return p
}

// read loads the documents of one file.
func (s *FileSource) read(fsys fs.FS, p string) ([]rag.Document, error) {
	ext := strings.ToLower(path.Ext(p))
	if ext == ".pdf" {
		return nil, errors.New("PDF is not supported (no PDF text extraction in this build); convert it to text or Markdown")
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > s.opts.MaxFileBytes {
		return nil, fmt.Errorf("file is %d bytes, larger than the %d bytes allowed (max_file_bytes)", info.Size(), s.opts.MaxFileBytes)
	}
	// The file may have grown since Stat: read one byte more than allowed to
	// notice.
	b, err := io.ReadAll(io.LimitReader(f, s.opts.MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > s.opts.MaxFileBytes {
		return nil, fmt.Errorf("file is larger than the %d bytes allowed (max_file_bytes)", s.opts.MaxFileBytes)
	}
	if looksBinary(b) {
		return nil, errors.New("file looks binary (NUL bytes or mostly control characters), not text")
	}
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	text := string(b)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	doc := rag.Document{ID: p, Source: s.display(p)}
	switch ext {
	case ".md", ".markdown":
		doc.Title, doc.Text, doc.Metadata = parseMarkdown(text)
	case ".html", ".htm":
		var warning string
		doc.Title, doc.Text, warning = extractHTML(text)
		if warning != "" {
			s.warn(warning, p, nil)
		}
	case ".json":
		docs, err := s.readJSON(p, text)
		return withFileMetadata(docs, p, info.ModTime()), err
	case ".jsonl", ".ndjson":
		return withFileMetadata(s.readJSONLines(p, text), p, info.ModTime()), nil
	default:
		doc.Text = text
	}
	withFileMetadata([]rag.Document{doc}, p, info.ModTime())
	if strings.TrimSpace(doc.Text) == "" {
		// Still a document: a file that lost its text must lose its chunks.
		s.warn("the document has no text (an empty file, or nothing readable in it): it is stored without chunks and no query finds it", p, nil)
	}
	return withFileMetadata([]rag.Document{doc}, p, info.ModTime()), nil
}

// Metadata keys a directory source gives every document (besides "source" and
// "title", which every chunk gets).
const (
	// MetadataPath is the file's path relative to the source directory.
	MetadataPath = "path"
	// MetadataModified is the file's modification time, UTC, as RFC 3339 text
	// ("2026-12-05T10:01:39Z"): ISO-8601 strings compare in time order.
	MetadataModified = "modified"
)

// withFileMetadata sets the file's path and modification time on docs (over
// same-named fields of the file's own: they say where the passage is).
func withFileMetadata(docs []rag.Document, p string, mod time.Time) []rag.Document {
	for i := range docs {
		md := make(map[string]any, len(docs[i].Metadata)+2)
		for k, v := range docs[i].Metadata {
			md[k] = v
		}
		md[MetadataPath] = p
		md[MetadataModified] = mod.UTC().Truncate(time.Second).Format(time.RFC3339)
		docs[i].Metadata = md
	}
	return docs
}

// readJSON reads a .json file: one object, or an array of objects.
func (s *FileSource) readJSON(p, text string) ([]rag.Document, error) {
	v, err := decodeJSON([]byte(text))
	if err != nil {
		return nil, jsonError([]byte(text), err)
	}
	switch v := v.(type) {
	case map[string]any:
		r, err := parseRecord(v, s.opts.TextField, s.opts.TitleField)
		if err != nil {
			return nil, fmt.Errorf("the object %w", err)
		}
		id := p
		if r.id != "" {
			id = p + "#" + r.id
		}
		return []rag.Document{s.recordDoc(id, p, r)}, nil
	case []any:
		var docs []rag.Document
		for i, o := range v {
			obj, ok := o.(map[string]any)
			if !ok {
				s.warn("record skipped", p, fmt.Errorf("element %d is a %s, not an object", i+1, jsonKind(o)))
				continue
			}
			r, err := parseRecord(obj, s.opts.TextField, s.opts.TitleField)
			if err != nil {
				s.warn("record skipped", p, fmt.Errorf("element %d %w", i+1, err))
				continue
			}
			id := r.id
			if id == "" {
				id = strconv.Itoa(i + 1)
			}
			docs = append(docs, s.recordDoc(p+"#"+id, p, r))
		}
		return docs, nil
	}
	return nil, fmt.Errorf("a JSON %s, not an object or an array of objects", jsonKind(v))
}

// readJSONLines reads a .jsonl file: a record per line. A bad line is skipped
// with a warning naming file:line; the other lines are kept.
func (s *FileSource) readJSONLines(p, text string) []rag.Document {
	var docs []rag.Document
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		where := s.display(p) + ":" + strconv.Itoa(n+1)
		v, err := decodeJSON([]byte(line))
		if err != nil {
			s.opts.Logger.Warn("rag source: line skipped", "line", where, "error", err)
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			s.opts.Logger.Warn("rag source: line skipped", "line", where, "error", fmt.Sprintf("a JSON %s, not an object", jsonKind(v)))
			continue
		}
		r, err := parseRecord(obj, s.opts.TextField, s.opts.TitleField)
		if err != nil {
			s.opts.Logger.Warn("rag source: line skipped", "line", where, "error", "the record "+err.Error())
			continue
		}
		id := r.id
		if id == "" {
			id = strconv.Itoa(n + 1)
		}
		docs = append(docs, s.recordDoc(p+"#"+id, p, r))
	}
	return docs
}

func (s *FileSource) recordDoc(id, p string, r record) rag.Document {
	return rag.Document{ID: id, Source: s.display(p), Title: r.title, Text: r.text, Metadata: r.metadata}
}

// looksBinary reports whether b's first 8 KiB hold a NUL byte, or more than 10%
// control characters and invalid UTF-8: text files do not.
func looksBinary(b []byte) bool {
	head := b[:min(len(b), 8<<10)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	odd := 0
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		// A rune cut by the 8 KiB boundary is not evidence.
		if r == utf8.RuneError && n == 1 && len(head)-i >= utf8.UTFMax {
			odd++
		} else if r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f' {
			odd++
		}
		i += n
	}
	return odd*10 > len(head)
}

// checkPattern rejects a malformed glob pattern.
func checkPattern(p string) error {
	for _, seg := range strings.Split(p, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("source: pattern %q is malformed (%v): use *, ?, [a-z] and ** for any directories", p, err)
		}
	}
	return nil
}

func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if match(strings.Split(pat, "/"), strings.Split(p, "/")) {
			return true
		}
	}
	return false
}

// match matches path segments against pattern segments, "**" matching any
// number of segments (none included).
func match(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range segs {
				if match(pat, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
