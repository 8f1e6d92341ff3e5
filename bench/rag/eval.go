package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arvenza/helix/internal/rag"
)

// Result is one evaluation, written as JSON.
type Result struct {
	Dataset string  `json:"dataset"`
	Label   string  `json:"label,omitempty"`
	Setup   Setup   `json:"setup"`
	Counts  Counts  `json:"counts"`
	Quality Quality `json:"quality"`
	Ingest  Ingest  `json:"ingest"`
	Query   Latency `json:"query"`
	// PeakRSSMiB is the process's peak resident memory (VmHWM) after the run:
	// the corpus as loaded, the store, and the queries.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	GoVersion  string  `json:"go_version"`
	CPUs       int     `json:"cpus"`
	Started    string  `json:"started"`
}

// Setup is what was evaluated.
type Setup struct {
	Config   string  `json:"config,omitempty"`
	Pipeline string  `json:"pipeline,omitempty"`
	Strategy string  `json:"strategy"`
	Chunk    string  `json:"chunk"`
	Store    string  `json:"store"`
	K1       float64 `json:"k1,omitempty"`
	B        float64 `json:"b,omitempty"`
	Embedder string  `json:"embedder,omitempty"`
	Sync     bool    `json:"fsync_per_put"`
	// Multifield is BEIR's query form (title and text as two BM25 fields,
	// best_fields with tie_breaker 0.5) in two separate stores, a cross-check of
	// the stores' own title field.
	Multifield bool `json:"multifield,omitempty"`
	// Flat: each document's title was put in front of its text, the document
	// having no title (how pipelines indexed BEIR before titles).
	Flat  bool `json:"flat,omitempty"`
	Depth int  `json:"depth"`
	// TieRule says how equal scores are ordered for scoring.
	TieRule string `json:"tie_rule"`
}

// Counts are the sizes involved.
type Counts struct {
	Documents      int `json:"documents"`
	Chunks         int `json:"chunks"`
	Queries        int `json:"queries"`         // scored: test queries with a relevant document
	EmptyQueries   int `json:"empty_queries"`   // scored queries that retrieved nothing (they score 0)
	SkippedQueries int `json:"skipped_queries"` // test queries without a relevant judgement
}

// Quality is the mean over the scored queries.
type Quality struct {
	NDCG10    float64 `json:"ndcg_at_10"`
	Recall100 float64 `json:"recall_at_100"`
}

// Ingest is how long putting the corpus into the store took.
type Ingest struct {
	Seconds    float64 `json:"seconds"`
	DocsPerSec float64 `json:"docs_per_sec"`
	// EmbedSeconds is the wall time during which the embedder was busy (any call
	// in flight); EmbedDocsPerSec is the embedder's own rate over it.
	EmbedSeconds    float64 `json:"embed_seconds,omitempty"`
	EmbedDocsPerSec float64 `json:"embed_docs_per_sec,omitempty"`
	// HelixDocsPerSec is the rate over the time the embedder was not busy:
	// chunking, analysis and the store's writes.
	HelixDocsPerSec float64 `json:"helix_docs_per_sec"`
}

// Latency summarises the per-query times of rag.Retrieve, one query at a time.
type Latency struct {
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MeanMs float64 `json:"mean_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// system is what an evaluation runs: ingest documents, then answer queries with
// at least depth chunks.
type system interface {
	ingest(ctx context.Context, docs []rag.Document) error
	retrieve(ctx context.Context, text string, depth int) ([]rag.Hit, error)
	chunks(ctx context.Context) (int, error)
	close() error
}

// evaluate ingests ds into sys and scores every test query.
func evaluate(ctx context.Context, ds *Dataset, sys system, timer *busyTimer, depth int, flat bool, res *Result) error {
	_, multifield := sys.(*multifieldSystem)
	docs := make([]rag.Document, len(ds.Docs))
	for i, d := range ds.Docs {
		docs[i] = Document(d, ds.Name, flat)
		if multifield {
			// The multifield system indexes the fields apart; nothing else sees this.
			docs[i].Metadata = map[string]any{"beir": d}
		}
	}
	res.Counts.Documents = len(docs)

	start := time.Now()
	if err := sys.ingest(ctx, docs); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	took := time.Since(start)
	res.Ingest.Seconds = took.Seconds()
	res.Ingest.DocsPerSec = float64(len(docs)) / took.Seconds()
	helixTime := took
	if timer != nil {
		busy := timer.total()
		res.Ingest.EmbedSeconds = busy.Seconds()
		if busy > 0 {
			res.Ingest.EmbedDocsPerSec = float64(len(docs)) / busy.Seconds()
		}
		helixTime -= busy
	}
	if helixTime > 0 {
		res.Ingest.HelixDocsPerSec = float64(len(docs)) / helixTime.Seconds()
	}
	n, err := sys.chunks(ctx)
	if err != nil {
		return err
	}
	res.Counts.Chunks = n

	var lat []float64
	var sumNDCG, sumRecall float64
	for _, q := range ds.Queries {
		judged := ds.Qrels[q.ID]
		if !hasRelevant(judged) {
			res.Counts.SkippedQueries++
			continue
		}
		t0 := time.Now()
		hits, err := sys.retrieve(ctx, q.Text, depth)
		lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
		if err != nil {
			return fmt.Errorf("query %s (%q): %w", q.ID, q.Text, err)
		}
		run := documentsOf(hits, depth)
		if len(run) == 0 {
			res.Counts.EmptyQueries++
		}
		sumNDCG += NDCG(run, judged, 10)
		sumRecall += Recall(run, judged, 100)
		res.Counts.Queries++
	}
	if res.Counts.Queries > 0 {
		res.Quality.NDCG10 = sumNDCG / float64(res.Counts.Queries)
		res.Quality.Recall100 = sumRecall / float64(res.Counts.Queries)
	}
	slices.Sort(lat)
	var sum float64
	for _, l := range lat {
		sum += l
	}
	if len(lat) > 0 {
		res.Query = Latency{P50Ms: percentile(lat, 50), P99Ms: percentile(lat, 99), MeanMs: sum / float64(len(lat)), MaxMs: lat[len(lat)-1]}
	}
	res.PeakRSSMiB = peakRSSMiB()
	res.GoVersion = runtime.Version()
	res.CPUs = runtime.NumCPU()
	return nil
}

// documentsOf turns chunk hits (best first) into a document run: a document
// scores its best chunk, and the first depth distinct documents are kept.
func documentsOf(hits []rag.Hit, depth int) []RankedDoc {
	seen := make(map[string]bool, len(hits))
	var run []RankedDoc
	for _, h := range hits {
		id := h.Chunk.DocID
		if seen[id] {
			continue
		}
		seen[id] = true
		run = append(run, RankedDoc{ID: id, Score: h.Score})
		if len(run) == depth {
			break
		}
	}
	return run
}

// peakRSSMiB reads the process's peak resident set size (VmHWM) from
// /proc/self/status; 0 where there is none.
func peakRSSMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseFloat(f[0], 64)
				if err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 0
}

// busyTimer wraps an embedder and measures the wall time during which at least
// one of its calls was in flight: with concurrent calls, summing their durations
// would overstate the embedder's share.
type busyTimer struct {
	rag.Embedder
	mu     sync.Mutex
	active int
	since  time.Time
	busy   time.Duration
}

func (t *busyTimer) Embed(ctx context.Context, texts []string, kind rag.EmbedKind) ([][]float32, error) {
	t.mu.Lock()
	if t.active == 0 {
		t.since = time.Now()
	}
	t.active++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.active--
		if t.active == 0 {
			t.busy += time.Since(t.since)
		}
		t.mu.Unlock()
	}()
	return t.Embedder.Embed(ctx, texts, kind)
}

func (t *busyTimer) total() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.busy
}

// Close closes the wrapped embedder when it can be.
func (t *busyTimer) Close() error {
	if c, ok := t.Embedder.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// directSystem is a store, a chunker and an optional embedder used through
// internal/rag directly: what a pipeline does, with every part chosen by flag.
type directSystem struct {
	store    rag.Store
	chunker  rag.Chunker
	embedder rag.Embedder // nil: none
	strategy string
	workers  int
	// closeFn releases what was opened for the store (the pgvector table).
	closeFn func() error
}

// ingest chunks and embeds documents on workers goroutines and puts each into
// the store as it is ready, as a pipeline does.
func (s *directSystem) ingest(ctx context.Context, docs []rag.Document) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan rag.Document)
	errc := make(chan error, s.workers)
	var wg sync.WaitGroup
	for range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range jobs {
				if err := s.ingestOne(ctx, d); err != nil {
					errc <- fmt.Errorf("document %s: %w", d.ID, err)
					cancel()
					return
				}
			}
		}()
	}
feed:
	for _, d := range docs {
		select {
		case jobs <- d:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	return ctx.Err()
}

func (s *directSystem) ingestOne(ctx context.Context, d rag.Document) error {
	chunks, err := s.chunker.Chunk(ctx, d)
	if err != nil {
		return err
	}
	var vecs [][]float32
	if s.embedder != nil && len(chunks) > 0 {
		texts := make([]string, len(chunks))
		for i, c := range chunks {
			texts[i] = c.Text
		}
		if vecs, err = s.embedder.Embed(ctx, texts, rag.EmbedDocument); err != nil {
			return err
		}
	}
	return s.store.Put(ctx, d.ID, d.Hash(), chunks, vecs)
}

func (s *directSystem) retrieve(ctx context.Context, text string, depth int) ([]rag.Hit, error) {
	return rag.Retrieve(ctx, s.store, s.embedder, rag.Query{Text: text, Strategy: s.strategy, TopK: depth})
}

func (s *directSystem) chunks(ctx context.Context) (int, error) {
	st, err := s.store.Stats(ctx)
	return st.Chunks, err
}

func (s *directSystem) close() error {
	err := s.store.Close()
	if c, ok := s.embedder.(interface{ Close() error }); ok {
		err = errors.Join(err, c.Close())
	}
	if s.closeFn != nil {
		err = errors.Join(err, s.closeFn())
	}
	return err
}

// wholeDocument is the "none" chunking: one chunk per document, its whole text.
type wholeDocument struct{}

func (wholeDocument) Chunk(_ context.Context, d rag.Document) ([]rag.Chunk, error) {
	if strings.TrimSpace(d.Text) == "" {
		return nil, nil
	}
	md := make(map[string]any, len(d.Metadata)+2)
	for k, v := range d.Metadata {
		md[k] = v
	}
	md["source"], md["title"] = d.Source, d.Title
	return []rag.Chunk{{ID: d.ID + "#0", DocID: d.ID, Text: d.Text, Title: d.Title, End: len(d.Text), Metadata: md}}, nil
}
