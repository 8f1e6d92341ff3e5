// Package pipelinetest has stand-in parts for tests of code that runs pipelines:
// an in-memory store that outlives a pipeline (kept per directory, so a restarted
// application finds its documents), a paragraph chunker, a word-hashing embedder
// that counts its calls, and a file source reading .md and .txt files.
package pipelinetest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/rerank"
)

// Kit holds the parts' shared state: stores by path and counters.
type Kit struct {
	mu     sync.Mutex
	stores map[string]*Store
	// EmbedCalls counts texts embedded as documents; Puts counts store writes.
	EmbedCalls atomic.Int64
	Puts       atomic.Int64
}

// New returns an empty kit.
func New() *Kit { return &Kit{stores: map[string]*Store{}} }

// Parts returns pipeline parts backed by k.
func (k *Kit) Parts() *pipeline.Parts {
	return &pipeline.Parts{
		Chunker: func(config.ChunkConfig, rag.Embedder) (rag.Chunker, error) { return paragraphs{}, nil },
		Embedder: func(context.Context, config.EmbedConfig) (rag.Embedder, error) {
			return &Embedder{calls: &k.EmbedCalls}, nil
		},
		Store: func(_ context.Context, p config.PipelineConfig, dataDir string, _ rag.Embedder, _ *slog.Logger) (rag.Store, error) {
			key := p.StorePath(dataDir)
			if p.Store.Store == "pgvector" {
				key = "pgvector:" + p.ID
			}
			k.mu.Lock()
			defer k.mu.Unlock()
			s := k.stores[key]
			if s == nil {
				s = &Store{docs: map[string]doc{}, puts: &k.Puts}
				k.stores[key] = s
			}
			s.closed.Store(false)
			return s, nil
		},
		Source:   func(src config.PipelineSource, _ *slog.Logger) (pipeline.Source, error) { return Files(src.Dir), nil },
		Reranker: rerank.New, // the real ones: http against a test server, onnx with a generated model
	}
}

// paragraphs is a chunker cutting at blank lines, keeping the latest # heading.
type paragraphs struct{}

func (paragraphs) Chunk(_ context.Context, d rag.Document) ([]rag.Chunk, error) {
	var out []rag.Chunk
	var heading []string
	off := 0
	for _, para := range strings.Split(d.Text, "\n\n") {
		start := off
		off += len(para) + 2
		t := strings.TrimSpace(para)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "#") {
			heading = []string{strings.TrimSpace(strings.TrimLeft(t, "#"))}
			continue
		}
		md := map[string]any{"source": d.Source}
		for k, v := range d.Metadata {
			md[k] = v
		}
		out = append(out, rag.Chunk{ID: d.ID + "#" + strconv.Itoa(len(out)), DocID: d.ID, Index: len(out), Text: t,
			Start: start, End: start + len(para), Headings: append([]string(nil), heading...), Metadata: md})
	}
	return out, nil
}

// Embedder hashes words into 16 dimensions.
type Embedder struct{ calls *atomic.Int64 }

func (e *Embedder) Model() string { return "test:words" }

func (e *Embedder) Embed(_ context.Context, texts []string, kind rag.EmbedKind) ([][]float32, error) {
	if kind == rag.EmbedDocument && e.calls != nil {
		e.calls.Add(int64(len(texts)))
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 16)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := sha256.Sum256([]byte(strings.Trim(w, ".,?!")))
			v[binary.BigEndian.Uint16(h[:2])%16]++
		}
		var n float64
		for _, x := range v {
			n += float64(x * x)
		}
		if n > 0 {
			for j := range v {
				v[j] /= float32(math.Sqrt(n))
			}
		}
		out[i] = v
	}
	return out, nil
}

type doc struct {
	hash    string
	chunks  []rag.Chunk
	vectors [][]float32
}

// Store is an in-memory store; keyword search counts query words in chunks.
type Store struct {
	mu     sync.RWMutex
	docs   map[string]doc
	puts   *atomic.Int64
	closed atomic.Bool
}

func (s *Store) Documents(context.Context) (map[string]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]string{}
	for id, d := range s.docs {
		out[id] = d.hash
	}
	return out, nil
}

func (s *Store) Put(_ context.Context, id, hash string, chunks []rag.Chunk, vectors [][]float32) error {
	s.puts.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs[id] = doc{hash, chunks, vectors}
	return nil
}

func (s *Store) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.docs, id)
	return nil
}

func (s *Store) all(match *rag.Expr) []rag.Chunk {
	var out []rag.Chunk
	for _, d := range s.docs {
		for _, c := range d.chunks {
			if match.Matches(c.Metadata) {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *Store) SearchVector(_ context.Context, v []float32, n int, f rag.Filter) ([]rag.Hit, error) {
	match, err := f.Parse() // once per query, as a real store does
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var hits []rag.Hit
	for _, d := range s.docs {
		if d.vectors == nil {
			continue
		}
		for i, c := range d.chunks {
			if !match.Matches(c.Metadata) {
				continue
			}
			var dot float64
			for j := range v {
				dot += float64(v[j] * d.vectors[i][j])
			}
			hits = append(hits, rag.Hit{Chunk: c, Score: dot})
		}
	}
	if hits == nil {
		return nil, rag.ErrNoVectors
	}
	return top(hits, n), nil
}

func (s *Store) SearchKeyword(_ context.Context, q string, n int, f rag.Filter) ([]rag.Hit, error) {
	match, err := f.Parse()
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var hits []rag.Hit
	words := strings.Fields(strings.ToLower(q))
	for _, c := range s.all(match) {
		text := strings.ToLower(c.Text)
		score := 0.0
		for _, w := range words {
			if len(w) > 2 && strings.Contains(text, strings.Trim(w, ".,?!")) {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, rag.Hit{Chunk: c, Score: score})
		}
	}
	return top(hits, n), nil
}

func top(hits []rag.Hit, n int) []rag.Hit {
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Chunk.ID < hits[j].Chunk.ID
	})
	if len(hits) > n {
		hits = hits[:n]
	}
	return hits
}

func (s *Store) Stats(context.Context) (rag.Stats, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := rag.Stats{Documents: len(s.docs)}
	for _, d := range s.docs {
		st.Chunks += len(d.chunks)
	}
	return st, nil
}

// Close marks the store closed; its content stays for the next Open.
func (s *Store) Close() error { s.closed.Store(true); return nil }

// Closed reports whether the store was closed since it was last opened.
func (s *Store) Closed() bool { return s.closed.Load() }

// Store returns the store kept under key (an embedded store's path), or nil.
func (k *Kit) Store(key string) *Store {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stores[key]
}

// FileSource reads the .md and .txt files under a directory.
type FileSource string

// Files returns the source of dir.
func Files(dir string) FileSource { return FileSource(dir) }

func (f FileSource) Walk(ctx context.Context, fn func(rag.Document) error) error {
	return filepath.WalkDir(string(f), func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.IsDir() || (filepath.Ext(path) != ".md" && filepath.Ext(path) != ".txt") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(string(f), path)
		rel = filepath.ToSlash(rel)
		return fn(rag.Document{ID: rel, Source: rel, Text: string(b)})
	})
}
