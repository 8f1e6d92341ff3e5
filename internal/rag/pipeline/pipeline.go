// Package pipeline turns a `pipelines:` entry into a running RAG pipeline: its
// ingest side (a file:// source or rag-ingest steps → chunk → embed → store,
// incremental by content hash) and its query side (retrieve → text with numbered
// sources, or JSON).
//
// [New] only checks and records the configuration: it opens no store, connects to
// no server and creates no directory, so validating a file has no side effects.
// [Pipeline.Start] creates the embedder and the store and ingests the source in
// the background: serving never waits for it, and a query during ingest sees what
// is stored so far. [Pipeline.Stop] cancels the ingest and closes the store.
//
// The parts (chunkers, embedders, stores, sources) come from [Parts]; [DefaultParts]
// are Helix's own, tests substitute fakes.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/rerank"
	"github.com/arvenza/helix/pkg/exchange"
)

// FilePrefix starts the ids of documents read from a pipeline's source: a re-scan
// deletes only the documents with this prefix that the source no longer has, so
// what rag-ingest steps put into the same pipeline stays.
const FilePrefix = "file:"

// Source yields a source's documents, each once, with ids relative to the source
// (the pipeline prefixes them with FilePrefix).
type Source interface {
	Walk(ctx context.Context, fn func(rag.Document) error) error
}

// Parts make a pipeline's chunker, embedder, store and source. A nil function
// means the part is not available in this build.
type Parts struct {
	// Chunker makes the chunker; emb is nil without rag-embed.
	Chunker func(cfg config.ChunkConfig, emb rag.Embedder) (rag.Chunker, error)
	// Embedder makes the embedder of a rag-embed step; when it is an io.Closer it
	// is closed at Stop.
	Embedder func(ctx context.Context, cfg config.EmbedConfig) (rag.Embedder, error)
	// Store opens the store of p (p.StorePath(dataDir) for embedded); logger
	// receives its recovery and migration messages.
	Store func(ctx context.Context, p config.PipelineConfig, dataDir string, emb rag.Embedder, logger *slog.Logger) (rag.Store, error)
	// Source reads a source: directory; logger receives warnings about skipped
	// files.
	Source func(src config.PipelineSource, logger *slog.Logger) (Source, error)
	// Reranker makes the reranker of a rag-rerank step; when it is an io.Closer
	// it is closed at Stop.
	Reranker func(ctx context.Context, cfg config.RerankConfig) (rerank.Reranker, error)
}

// Options tune [New].
type Options struct {
	// Logger receives progress and errors; nil means slog.Default().
	Logger *slog.Logger
	// DataDir is helix.data_dir ("" means config.DefaultDataDir).
	DataDir string
	// Parts are the pipeline's parts; nil means DefaultParts().
	Parts *Parts
	// NoBackgroundIngest keeps Start from ingesting the source (the CLI's query
	// command, which reads what is stored).
	NoBackgroundIngest bool
	// ProgressInterval is how often ingest progress is logged at most; 0 means 10s.
	ProgressInterval time.Duration
	// Workers is how many documents are chunked and embedded at once; 0 means 4.
	Workers int
}

// Pipeline is one running pipeline. Safe for concurrent use once started.
type Pipeline struct {
	cfg    config.PipelineConfig
	opts   Options
	parts  Parts
	logger *slog.Logger

	mu       sync.RWMutex
	store    rag.Store
	embedder rag.Embedder
	chunker  rag.Chunker
	reranker rerank.Reranker // nil without a rag-rerank step
	started  bool

	cancel   context.CancelFunc
	ingestWG sync.WaitGroup
	done     chan struct{} // closed when the background ingest ends (or at once without one)
	doneOnce sync.Once

	progressMu sync.Mutex
	progress   Progress

	hashMu        sync.Mutex
	hashes        map[string]string // stored documents' hashes (see loadHashes); nil until loaded
	chunksCounted time.Time         // when refreshChunks last counted

	docsIngested atomic.Uint64
	ingestErrors atomic.Uint64
	queries      atomic.Uint64
	queryErrors  atomic.Uint64
	chunks       atomic.Int64
}

// New checks cfg against the parts (those that exist in this build) and returns
// the pipeline, not started. It has no side effects.
func New(cfg config.PipelineConfig, opts Options) (*Pipeline, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = 10 * time.Second
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	parts := DefaultParts()
	if opts.Parts != nil {
		parts = *opts.Parts
	}
	p := &Pipeline{cfg: cfg, opts: opts, parts: parts, logger: opts.Logger.With("pipeline", cfg.ID), done: make(chan struct{})}
	var errs config.Errors
	missing := func(pos config.Pos, what string) {
		errs = append(errs, &config.Error{Pos: pos, Msg: fmt.Sprintf("pipeline %q: %s is not available in this build", cfg.ID, what)})
	}
	if parts.Chunker == nil {
		missing(cfg.Chunk.Pos, "rag-chunk")
	}
	if cfg.Embed != nil && parts.Embedder == nil {
		missing(cfg.Embed.Pos, "rag-embed provider "+cfg.Embed.Provider)
	}
	if cfg.Embed != nil && opts.Parts == nil {
		if err := embedders.Available(cfg.Embed.Provider); err != nil { // left out of this build
			errs = append(errs, &config.Error{Pos: cfg.Embed.Pos, Msg: fmt.Sprintf("pipeline %q: rag-embed provider %v", cfg.ID, err)})
		}
	}
	if parts.Store == nil {
		missing(cfg.Store.Pos, "rag-store "+cfg.Store.Store)
	}
	if cfg.Source != nil && parts.Source == nil {
		missing(cfg.Source.Pos, "the file source")
	}
	errs = append(errs, checkRerank(cfg, parts, opts.Parts == nil)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// Config returns the pipeline's configuration.
func (p *Pipeline) Config() config.PipelineConfig { return p.cfg }

// ID returns the pipeline's id.
func (p *Pipeline) ID() string { return p.cfg.ID }

// Start creates the embedder, the chunker and the store, then ingests the source
// in the background (unless Options.NoBackgroundIngest). It returns once the store
// is open: queries are served from then on.
func (p *Pipeline) Start(ctx context.Context) error {
	return p.start(ctx, !p.opts.NoBackgroundIngest)
}

// Open creates the embedder, the chunker and the store without ingesting
// anything: the CLI then runs IngestSource or Query itself. Stop closes them.
func (p *Pipeline) Open(ctx context.Context) error { return p.start(ctx, false) }

func (p *Pipeline) start(ctx context.Context, ingest bool) error {
	if err := p.open(ctx); err != nil {
		p.doneOnce.Do(func() { close(p.done) })
		return err
	}
	if p.cfg.Source == nil || !ingest {
		p.doneOnce.Do(func() { close(p.done) })
		return nil
	}
	ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	p.ingestWG.Add(1)
	go func() {
		defer p.ingestWG.Done()
		defer p.doneOnce.Do(func() { close(p.done) })
		res, err := p.IngestSource(ictx)
		switch {
		case err != nil && ictx.Err() != nil:
			p.logger.Info("pipeline ingest cancelled", "ingested", res.Ingested, "skipped", res.Skipped)
		case err != nil:
			p.logger.Error("pipeline ingest failed", "err", err, "ingested", res.Ingested, "errors", res.Errors)
		default:
			p.logger.Info("pipeline ingest done", "documents", res.Seen, "ingested", res.Ingested, "skipped", res.Skipped,
				"deleted", res.Deleted, "errors", res.Errors, "chunks", res.Chunks, "took", res.Took.Round(time.Millisecond))
		}
	}()
	return nil
}

func (p *Pipeline) open(ctx context.Context) (err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return fmt.Errorf("pipeline %s: already started", p.cfg.ID)
	}
	p.started = true
	var emb rag.Embedder
	if p.cfg.Embed != nil {
		if emb, err = p.parts.Embedder(ctx, *p.cfg.Embed); err != nil {
			return fmt.Errorf("pipeline %s: rag-embed: %w", p.cfg.ID, err)
		}
	}
	closeEmb := func() {
		if c, ok := emb.(io.Closer); ok {
			_ = c.Close()
		}
	}
	ch, err := p.parts.Chunker(p.cfg.Chunk, emb)
	if err != nil {
		closeEmb()
		return fmt.Errorf("pipeline %s: %w", p.cfg.ID, err)
	}
	st, err := p.parts.Store(ctx, p.cfg, p.opts.DataDir, emb, p.logger)
	if err != nil {
		closeEmb()
		return fmt.Errorf("pipeline %s: rag-store %s: %w", p.cfg.ID, p.cfg.Store.Store, err)
	}
	rr, err := p.openReranker(ctx)
	if err != nil {
		closeEmb()
		_ = st.Close()
		return err
	}
	p.embedder, p.chunker, p.store, p.reranker = emb, ch, st, rr
	if s, err := st.Stats(ctx); err == nil {
		p.chunks.Store(int64(s.Chunks))
	}
	return nil
}

// Stop cancels a running ingest, waits for it and closes the store and the
// embedder.
func (p *Pipeline) Stop(ctx context.Context) error {
	if p.cancel != nil {
		p.cancel()
	}
	waited := make(chan struct{})
	go func() { p.ingestWG.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		return fmt.Errorf("pipeline %s: ingest did not stop: %w", p.cfg.ID, ctx.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	if p.store != nil {
		err = p.store.Close()
		p.store = nil
	}
	if c, ok := p.embedder.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	if c, ok := p.reranker.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	p.embedder, p.reranker = nil, nil
	return err
}

// IngestDone is closed when the background ingest of the source has ended (at
// once when there is none).
func (p *Pipeline) IngestDone() <-chan struct{} { return p.done }

func (p *Pipeline) parts3() (rag.Store, rag.Embedder, rag.Chunker, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.store == nil {
		return nil, nil, nil, fmt.Errorf("pipeline %s is not running", p.cfg.ID)
	}
	return p.store, p.embedder, p.chunker, nil
}

func (p *Pipeline) rerankerOf() rerank.Reranker {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.reranker
}

// Query is one question to the pipeline; zero fields take the rag-retrieve step's.
type Query struct {
	Text string
	TopK int
	// Filter is the caller's: it is ANDed with the pipeline's own filter,
	// which it can narrow and never widen.
	Filter   rag.Filter
	Strategy string
	MinScore *float64
	// Exchange resolves the placeholders of the pipeline's own filter
	// (${principal.claims.tenant}); nil for a query from no exchange (the CLI,
	// the console), where such a filter fails the query.
	Exchange *exchange.Exchange
}

// Query retrieves the chunks that answer q, best first.
func (p *Pipeline) Query(ctx context.Context, q Query) ([]rag.Hit, error) {
	p.queries.Add(1)
	hits, err := p.query(ctx, q)
	if err != nil {
		p.queryErrors.Add(1)
	}
	return hits, err
}

func (p *Pipeline) query(ctx context.Context, q Query) ([]rag.Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, errors.New("the query is empty")
	}
	st, emb, _, err := p.parts3()
	if err != nil {
		return nil, err
	}
	r := p.cfg.Retrieve
	own, err := ResolveFilter(r.Filter, q.Exchange)
	if err != nil {
		return nil, err
	}
	rq := rag.Query{Text: q.Text, Strategy: r.Strategy, TopK: r.TopK, Filter: rag.AndFilters(own, q.Filter), MinScore: r.MinScore, Candidates: r.Candidates,
		MaxTopK: r.MaxTopK, MaxBytes: r.MaxResultBytes}
	if q.TopK > 0 {
		rq.TopK = q.TopK
	}
	if q.Strategy != "" {
		rq.Strategy = q.Strategy
	}
	if q.MinScore != nil {
		rq.MinScore = *q.MinScore
	}
	if rq.Strategy == rag.StrategyVector && emb == nil {
		return nil, fmt.Errorf("pipeline %s has no rag-embed step: use strategy keyword or hybrid", p.cfg.ID)
	}
	if rr := p.rerankerOf(); rr != nil {
		return p.retrieveReranked(ctx, st, emb, rr, rq)
	}
	return rag.Retrieve(ctx, st, emb, rq)
}

// Stats are a pipeline's counters, for /metrics.
type Stats struct {
	DocumentsIngested uint64 // documents (re)written to the store
	IngestErrors      uint64 // documents that failed
	Queries           uint64
	QueryErrors       uint64
	Chunks            int64 // chunks in the store, as of the latest write
}

// Stats returns the pipeline's counters.
func (p *Pipeline) Stats() Stats {
	return Stats{DocumentsIngested: p.docsIngested.Load(), IngestErrors: p.ingestErrors.Load(),
		Queries: p.queries.Load(), QueryErrors: p.queryErrors.Load(), Chunks: p.chunks.Load()}
}
