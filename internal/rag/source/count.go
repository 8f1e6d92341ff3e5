package source

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"path"
	"strings"
)

// Count returns about how many documents Walk yields, without parsing them: a
// file is one document, a .jsonl file one per non-blank line, a .json array one
// per element. It is the total of a progress bar (the walk itself may skip a
// record that does not parse, or a file that looks binary) and reads each file
// once more, far faster than the ingest does: a million-document source is
// counted while its first documents are being stored. Errors are ctx's or the
// root's only; unreadable files count as none.
func (s *FileSource) Count(ctx context.Context) (int, error) {
	n := 0
	err := s.files(ctx, func(fsys fs.FS, p string) error {
		n += s.countFile(fsys, p)
		return nil
	})
	return n, err
}

func (s *FileSource) countFile(fsys fs.FS, p string) int {
	ext := strings.ToLower(path.Ext(p))
	switch ext {
	case ".pdf":
		return 0
	case ".jsonl", ".ndjson", ".json":
	default:
		return 1
	}
	f, err := fsys.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, s.opts.MaxFileBytes+1))
	if err != nil || int64(len(b)) > s.opts.MaxFileBytes {
		return 0 // Walk skips it too
	}
	if ext != ".json" {
		n := 0
		for line := range bytes.Lines(b) {
			if len(bytes.TrimSpace(line)) > 0 {
				n++
			}
		}
		return n
	}
	// A .json file: an array's elements, else one object.
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\ufeff"))))
	tok, err := dec.Token()
	if err != nil {
		return 0
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return 1
	}
	n := 0
	for dec.More() {
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
		n++
	}
	return n
}
