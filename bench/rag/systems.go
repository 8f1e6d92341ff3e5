package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/chunk"
	"github.com/arvenza/helix/internal/rag/embed/onnx"
	"github.com/arvenza/helix/internal/rag/embed/onnx/onnxtest"
	"github.com/arvenza/helix/internal/rag/embed/openai"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/store/embedded"
	"github.com/arvenza/helix/internal/rag/store/pgvector"
	"github.com/arvenza/helix/internal/rag/textproc"
)

// postgresEnv names the PostgreSQL URL of --store pgvector (the one `make test`'s
// throw-away cluster exports).
const postgresEnv = "HELIX_POSTGRES_URL"

// openDirect builds the store, chunker and embedder the flags ask for.
func openDirect(ctx context.Context, o options, ds *Dataset, tmp string, setup *Setup) (system, *busyTimer, error) {
	switch o.Strategy {
	case rag.StrategyKeyword, rag.StrategyVector, rag.StrategyHybrid:
	default:
		return nil, nil, fmt.Errorf("--strategy %q: want keyword, vector or hybrid", o.Strategy)
	}
	setup.Strategy, setup.Chunk, setup.Store = o.Strategy, o.Chunk, o.Store
	if o.Multifield {
		if o.Strategy != rag.StrategyKeyword || o.Chunk != "none" || o.Store != "embedded" || o.Embed != "none" {
			return nil, nil, errors.New("--multifield is BEIR's BM25 baseline: keyword strategy, --chunk none, embedded store, no embedder")
		}
		bm := bm25From(o)
		setup.K1, setup.B, setup.Sync, setup.Multifield = bm.K1, bm.B, !o.NoSync, true
		sys, err := openMultifield(filepath.Join(tmp, "store"), bm, o.NoSync)
		return sys, nil, err
	}
	emb, err := newEmbedder(o, ds, tmp)
	if err != nil {
		return nil, nil, err
	}
	var timer *busyTimer
	var embedder rag.Embedder
	if emb != nil {
		timer = &busyTimer{Embedder: emb}
		embedder = timer
		setup.Embedder = emb.Model()
	} else if o.Strategy != rag.StrategyKeyword {
		return nil, nil, fmt.Errorf("--strategy %s needs an embedder: add --embed openai, onnx or onnx-random", o.Strategy)
	}
	fail := func(err error) (system, *busyTimer, error) {
		if timer != nil {
			_ = timer.Close()
		}
		return nil, nil, err
	}
	chunker, err := newChunker(o.Chunk, embedder)
	if err != nil {
		return fail(err)
	}
	sys := &directSystem{chunker: chunker, embedder: embedder, strategy: o.Strategy, workers: o.Workers}
	switch o.Store {
	case "embedded":
		bm := bm25From(o)
		setup.K1, setup.B, setup.Sync = bm.K1, bm.B, !o.NoSync
		st, err := embedded.Open(filepath.Join(tmp, "store"), embedded.Options{BM25: &bm, NoSync: o.NoSync, Analyzer: textproc.English()})
		if err != nil {
			return fail(err)
		}
		sys.store = st
	case "pgvector":
		if o.K1 > 0 || o.B >= 0 {
			return fail(errors.New("--k1 and --b tune the embedded store's BM25; pgvector ranks keywords with the embedded store's defaults (k1 1.2, b 0.75)"))
		}
		dsn := os.Getenv(postgresEnv)
		if dsn == "" {
			return fail(fmt.Errorf("--store pgvector needs $%s (a PostgreSQL URL with the vector extension available; eval \"$(make -s postgres-start)\")", postgresEnv))
		}
		table := benchTable()
		var model string
		if embedder != nil {
			model = embedder.Model()
		}
		st, err := pgvector.Open(ctx, pgvector.Options{DSN: dsn, Table: table, Model: model})
		if err != nil {
			return fail(errors.Join(err, dropTables(dsn, table)))
		}
		sys.store = st
		sys.closeFn = func() error { return dropTables(dsn, table) }
	default:
		return fail(fmt.Errorf("--store %q: want embedded or pgvector", o.Store))
	}
	return sys, timer, nil
}

// bm25From is the store's default BM25 with --k1 and --b applied.
func bm25From(o options) embedded.BM25 {
	bm := embedded.DefaultBM25
	if o.K1 > 0 {
		bm.K1 = o.K1
	}
	if o.B >= 0 {
		bm.B = o.B
	}
	return bm
}

// benchTable is a table name no pipeline uses, unique to this run.
func benchTable() string {
	return fmt.Sprintf("helix_bench_rag_%d_%d", os.Getpid(), time.Now().Unix())
}

// dropTables removes a pgvector store's tables.
func dropTables(dsn, table string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("drop the benchmark's tables %s_*: %w", table, err)
	}
	defer conn.Close(ctx)
	for _, suffix := range []string{"_terms", "_df", "_bm25_stats", "_chunks", "_documents", "_meta"} {
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{table + suffix}.Sanitize()+" CASCADE"); err != nil {
			return fmt.Errorf("drop table %s%s: %w", table, suffix, err)
		}
	}
	return nil
}

// newChunker parses --chunk: none, or strategy[:size[:overlap]].
func newChunker(spec string, emb rag.Embedder) (rag.Chunker, error) {
	if spec == "none" {
		return wholeDocument{}, nil
	}
	parts := strings.Split(spec, ":")
	if len(parts) > 3 {
		return nil, fmt.Errorf("--chunk %q: want none or STRATEGY[:SIZE[:OVERLAP]], e.g. recursive:512:64", spec)
	}
	cfg := chunk.Config{Strategy: parts[0]}
	if len(parts) > 1 {
		n, err := strconv.Atoi(parts[1])
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--chunk %q: size %q is not a positive number of tokens", spec, parts[1])
		}
		cfg.Size = n
	}
	if len(parts) > 2 {
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--chunk %q: overlap %q is not a number of tokens ≥ 0", spec, parts[2])
		}
		cfg.Overlap = n
		if n == 0 {
			cfg.Overlap = chunk.NoOverlap
		}
	}
	c, err := chunk.New(cfg, emb)
	if err != nil {
		return nil, fmt.Errorf("--chunk %q: %w", spec, err)
	}
	return c, nil
}

// newEmbedder makes the --embed embedder; nil for none.
func newEmbedder(o options, ds *Dataset, tmp string) (rag.Embedder, error) {
	switch o.Embed {
	case "", "none":
		return nil, nil
	case "openai":
		return openai.New(openai.Config{Model: o.EmbedModel, BaseURL: o.EmbedURL, Dimensions: o.EmbedDimensions,
			QueryPrefix: o.QueryPrefix, DocumentPrefix: o.DocPrefix})
	case "onnx":
		if o.ONNXModel == "" {
			return nil, errors.New("--embed onnx needs --onnx-model (a sentence-embedding model.onnx with its tokenizer.json)")
		}
		return onnx.New(onnx.Config{ModelPath: o.ONNXModel, LibraryPath: o.ONNXLib, QueryPrefix: o.QueryPrefix, DocumentPrefix: o.DocPrefix})
	case "onnx-random":
		model, err := writeRandomModel(ds, filepath.Join(tmp, "model"))
		if err != nil {
			return nil, err
		}
		return onnx.New(onnx.Config{ModelPath: model, LibraryPath: o.ONNXLib})
	}
	return nil, fmt.Errorf("--embed %q: want none, openai, onnx or onnx-random", o.Embed)
}

// Shape of the random model: MiniLM's vector size, so that vector search costs
// what it would with a small real model, and a vocabulary of the corpus' most
// frequent words, so that texts are not all [UNK].
const (
	randomModelDim   = 384
	randomModelWords = 8000
)

// writeRandomModel writes a random token-lookup model (no transformer: its
// vectors are means of random word vectors) and its tokenizer into dir.
func writeRandomModel(ds *Dataset, dir string) (string, error) {
	counts := map[string]int{}
	for _, d := range ds.Docs {
		for _, w := range textproc.Words(DocText(d)) {
			counts[w]++
		}
	}
	words := make([]string, 0, len(counts))
	for w := range counts {
		if !strings.ContainsAny(w, ".,'") { // the tokenizer splits at punctuation
			words = append(words, w)
		}
	}
	slices.SortFunc(words, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	words = words[:min(len(words), randomModelWords)]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	mo := onnxtest.ModelOptions{Vocab: 4 + len(words), Dim: randomModelDim, Seed: 1}
	model := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(model, onnxtest.Model(mo), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), onnxtest.Tokenizer(words), 0o644); err != nil {
		return "", err
	}
	return model, nil
}

// pipelineSystem is a pipeline of a Helix YAML file, running as configured; only
// its store's location is moved (a temporary directory, or a fresh pgvector table
// dropped after) so that the evaluation starts empty and touches nothing of the
// user's.
type pipelineSystem struct {
	p       *pipeline.Pipeline
	closeFn func() error
}

func openPipeline(ctx context.Context, o options, tmp string, setup *Setup) (system, *busyTimer, error) {
	if o.Strategy != "keyword" || o.Chunk != "none" || o.Store != "embedded" || o.Embed != "none" || o.K1 > 0 || o.B >= 0 {
		return nil, nil, errors.New("--config evaluates the pipeline as configured: leave out --strategy, --chunk, --store, --embed, --k1 and --b")
	}
	cfg, err := config.Load(o.Config)
	if err != nil {
		return nil, nil, err
	}
	var pc *config.PipelineConfig
	var ids []string
	for i := range cfg.Pipelines {
		ids = append(ids, cfg.Pipelines[i].ID)
		if cfg.Pipelines[i].ID == o.Pipeline {
			pc = &cfg.Pipelines[i]
		}
	}
	if pc == nil {
		return nil, nil, fmt.Errorf("%s has no pipeline %q (it has: %s)", o.Config, o.Pipeline, strings.Join(ids, ", "))
	}
	p := *pc
	var closeFn func() error
	switch p.Store.Store {
	case "pgvector":
		table := benchTable()
		p.Store.Table = table
		dsn := p.Store.DSN
		if dsn == "" {
			dsn = os.Getenv("DATABASE_URL")
		}
		closeFn = func() error { return dropTables(dsn, table) }
	default:
		p.Store.Path = filepath.Join(tmp, "store")
	}
	setup.Config, setup.Pipeline = o.Config, p.ID
	setup.Strategy = p.Retrieve.Strategy
	if p.Embed == nil && setup.Strategy == rag.StrategyHybrid {
		setup.Strategy = "hybrid (keyword: no embedder)"
	}
	setup.Chunk = fmt.Sprintf("%s:%d:%d %s", p.Chunk.Strategy, p.Chunk.Size, p.Chunk.Overlap, p.Chunk.Unit)
	setup.Store = p.Store.Store
	setup.Sync = p.Store.Store != "pgvector"
	if p.Store.Store != "pgvector" {
		setup.K1, setup.B = embedded.DefaultBM25.K1, embedded.DefaultBM25.B
	}

	var timer *busyTimer
	parts := pipeline.DefaultParts()
	defaultEmbedder := parts.Embedder
	parts.Embedder = func(ctx context.Context, c config.EmbedConfig) (rag.Embedder, error) {
		var e rag.Embedder
		var err error
		if c.Provider == "onnx" {
			// The onnx embedder exists in this build even where the pipeline
			// package does not wire it in yet.
			e, err = onnx.New(onnx.Config{ModelPath: c.ModelPath, TokenizerPath: c.TokenizerPath, LibraryPath: c.LibraryPath,
				BatchSize: c.BatchSize, QueryPrefix: c.QueryPrefix, DocumentPrefix: c.DocumentPrefix})
		} else {
			e, err = defaultEmbedder(ctx, c)
		}
		if err != nil {
			return nil, err
		}
		timer = &busyTimer{Embedder: e}
		setup.Embedder = e.Model()
		return timer, nil
	}
	pl, err := pipeline.New(p, pipeline.Options{DataDir: tmp, Parts: &parts, NoBackgroundIngest: true, Workers: o.Workers})
	if err != nil {
		return nil, nil, err
	}
	if err := pl.Start(ctx); err != nil {
		if closeFn != nil {
			err = errors.Join(err, closeFn())
		}
		return nil, nil, err
	}
	return &pipelineSystem{p: pl, closeFn: closeFn}, timer, nil
}

func (s *pipelineSystem) ingest(ctx context.Context, docs []rag.Document) error {
	res, err := s.p.Ingest(ctx, docs)
	if err != nil {
		return err
	}
	if res.Ingested != len(docs) {
		return fmt.Errorf("the pipeline ingested %d of %d documents (%d errors)", res.Ingested, len(docs), res.Errors)
	}
	return nil
}

func (s *pipelineSystem) retrieve(ctx context.Context, text string, depth int) ([]rag.Hit, error) {
	return s.p.Query(ctx, pipeline.Query{Text: text, TopK: depth})
}

func (s *pipelineSystem) chunks(context.Context) (int, error) {
	return int(s.p.Stats().Chunks), nil
}

func (s *pipelineSystem) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.p.Stop(ctx)
	if s.closeFn != nil {
		err = errors.Join(err, s.closeFn())
	}
	return err
}
