// Package rag holds what Helix's retrieval-augmented generation pipelines are made
// of, and the retrieval logic that combines them. A pipeline has two sides:
//
//   - ingest: documents (from a file:// source or a rag-ingest step) are cut into
//     chunks by a [Chunker], embedded by an [Embedder] (optional) and put into a
//     [Store], incrementally: a document whose [Document.Hash] is unchanged is
//     skipped, a changed one replaced, a vanished one deleted;
//   - query: [Retrieve] finds the chunks that answer a query, by vector similarity,
//     by keyword (BM25), or both fused with reciprocal rank fusion.
//
// Implementations live in sub-packages, one per responsibility: chunk (fixed,
// recursive, semantic), textproc (the keyword analyzer: tokens, stop words,
// English stemming), embed/openai and embed/onnx, store/embedded (pure Go, on
// disk) and store/pgvector, pipeline (ingest and query sides, the YAML wiring).
package rag

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
)

// Document is one source document before chunking.
type Document struct {
	// ID is stable across ingests of the same document: a file's path relative to
	// the source directory, or what a rag-ingest step was given.
	ID string
	// Source says where it came from (a file path or a URI), for citations.
	Source string
	Title  string
	Text   string
	// Metadata are the document's own fields (front matter, JSON fields); values
	// are strings, numbers or booleans. Filters match them.
	Metadata map[string]any
}

// Hash is the content hash that makes ingest incremental: it covers the title,
// the text and the metadata, so a change to any of them re-ingests the document.
func (d Document) Hash() string {
	h := sha256.New()
	h.Write([]byte(d.Title))
	h.Write([]byte{0})
	h.Write([]byte(d.Text))
	h.Write([]byte{0})
	if len(d.Metadata) > 0 {
		b, _ := json.Marshal(d.Metadata) // map keys are sorted: deterministic
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Chunk is a piece of a document: what is embedded, indexed and retrieved.
type Chunk struct {
	// ID is DocID + "#" + the chunk's index.
	ID    string
	DocID string
	// Index is the chunk's position in its document, from 0.
	Index int
	Text  string
	// Title is the document's title ("" when it has none), the same for every
	// chunk of a document. Stores index it as a keyword field of its own, apart
	// from Text (see store/embedded's SearchKeyword), and it is also in Metadata
	// as "title".
	Title string
	// Start and End are the byte offsets of Text in the document's text.
	Start, End int
	// Headings are the Markdown or HTML headings in force where the chunk starts,
	// outermost first.
	Headings []string
	// Metadata is the document's metadata plus "source" and "title".
	Metadata map[string]any
}

// Chunker cuts a document into chunks, in order. Implementations are safe for
// concurrent use.
type Chunker interface {
	Chunk(ctx context.Context, doc Document) ([]Chunk, error)
}

// EmbedKind says what texts are embedded as: some models embed a query with a
// prefix ("query: ") that documents do not get.
type EmbedKind int

const (
	EmbedDocument EmbedKind = iota
	EmbedQuery
)

// Embedder turns texts into vectors, one per text, in order. Implementations
// batch, retry and cache as they see fit, are safe for concurrent use and return
// promptly when ctx ends.
type Embedder interface {
	Embed(ctx context.Context, texts []string, kind EmbedKind) ([][]float32, error)
	// Model names the model ("openai:text-embedding-3-small"): a store refuses
	// vectors of another model than the one it was filled with.
	Model() string
}

// Hit is a retrieved chunk and its score (higher is better; scales differ by
// strategy: cosine similarity, BM25, fused rank).
type Hit struct {
	Chunk Chunk
	Score float64
}

// Stats counts what a store holds.
type Stats struct {
	Documents int
	Chunks    int
}

// Store holds a pipeline's chunks, their vectors and a keyword index. Queries may
// run while documents are being put: they see what is stored so far. Safe for
// concurrent use.
type Store interface {
	// Documents returns the content hash of every stored document by id.
	Documents(ctx context.Context) (map[string]string, error)
	// Put replaces the document's chunks with chunks (and their vectors; nil when
	// the pipeline has no embedder), recording hash as its content hash. The
	// replacement is atomic for queries: they see the old chunks or the new ones.
	Put(ctx context.Context, docID, hash string, chunks []Chunk, vectors [][]float32) error
	// Delete removes the document and its chunks; deleting an unknown id is not
	// an error.
	Delete(ctx context.Context, docID string) error
	// SearchVector returns the n chunks most similar to vector (cosine), best
	// first. ErrNoVectors when the store holds no vectors.
	SearchVector(ctx context.Context, vector []float32, n int, f Filter) ([]Hit, error)
	// SearchKeyword returns the n chunks that best match query by BM25 (or the
	// store's keyword ranking), best first.
	SearchKeyword(ctx context.Context, query string, n int, f Filter) ([]Hit, error)
	Stats(ctx context.Context) (Stats, error)
	Close() error
}

// ErrNoVectors is returned by a vector search of a store filled without an
// embedder.
var ErrNoVectors = errors.New("the store holds no vectors (the pipeline has no rag-embed step)")
