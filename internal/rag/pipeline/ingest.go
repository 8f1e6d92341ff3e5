package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/arvenza/helix/internal/rag"
)

// Result counts what one ingest did.
type Result struct {
	Seen     int // documents read
	Ingested int // new or changed documents written
	Skipped  int // unchanged documents
	Deleted  int // documents the source no longer has
	Errors   int // documents that failed (logged, not fatal)
	Chunks   int // chunks written
	Took     time.Duration
}

// Progress is the state of the pipeline's latest source ingest, for progress
// bars: Result so far, whether it is running, and the document being read.
type Progress struct {
	Result
	// Total is how many documents the source holds: counted beside the ingest
	// when the source can count (see [Counter]; 0 until then), and Seen once
	// the whole source was read.
	Total   int
	Running bool
	Done    bool
	Current string
	Started time.Time
}

// Counter is a source that can count its documents quickly, for a progress
// bar's total and its ETA; about is enough (see source.FileSource.Count).
type Counter interface {
	Count(ctx context.Context) (int, error)
}

// Progress returns the latest source ingest's progress.
func (p *Pipeline) Progress() Progress {
	p.progressMu.Lock()
	defer p.progressMu.Unlock()
	return p.progress
}

// IngestSource reads the pipeline's source and brings the store up to date:
// unchanged documents are skipped, changed ones replaced and, when the whole
// source was read, the documents it no longer has deleted. A document that fails
// is logged and counted; the ingest goes on. The error is the source's (an
// unreadable directory) or ctx's.
func (p *Pipeline) IngestSource(ctx context.Context) (Result, error) {
	if p.cfg.Source == nil {
		return Result{}, fmt.Errorf("pipeline %s has no source: feed it with rag-ingest steps", p.cfg.ID)
	}
	st, _, _, err := p.parts3()
	if err != nil {
		return Result{}, err
	}
	src, err := p.parts.Source(*p.cfg.Source, p.logger)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	p.setProgress(func(pr *Progress) { *pr = Progress{Running: true, Started: start} })
	if c, ok := src.(Counter); ok {
		countCtx, stopCount := context.WithCancel(ctx)
		defer stopCount()
		go func() {
			if n, err := c.Count(countCtx); err == nil {
				p.setProgress(func(pr *Progress) {
					if pr.Running && pr.Total == 0 {
						pr.Total = n
					}
				})
			}
		}()
	}
	known, err := st.Documents(ctx)
	if err != nil {
		p.setProgress(func(pr *Progress) { pr.Running = false })
		return Result{}, fmt.Errorf("read the store's documents: %w", err)
	}
	p.setHashes(known)
	b := p.newBatch(ctx, func(id string) string { return known[id] }, true)
	walkErr := src.Walk(ctx, func(d rag.Document) error {
		d.ID = FilePrefix + d.ID
		return b.add(d)
	})
	res := b.wait()
	if walkErr == nil && ctx.Err() == nil {
		for id := range known {
			if !strings.HasPrefix(id, FilePrefix) || b.seen[id] {
				continue
			}
			if err := st.Delete(ctx, id); err != nil {
				p.logger.Warn("pipeline: delete a vanished document", "doc", id, "err", err)
				res.Errors++
				p.ingestErrors.Add(1)
				continue
			}
			p.setHash(id, "")
			res.Deleted++
		}
		p.refreshChunks(ctx, st, true)
	}
	res.Took = time.Since(start)
	p.setProgress(func(pr *Progress) {
		pr.Result, pr.Running, pr.Done, pr.Current = res, false, true, ""
		if walkErr == nil && ctx.Err() == nil {
			pr.Total = res.Seen
		}
	})
	if walkErr == nil {
		walkErr = ctx.Err()
	}
	return res, walkErr
}

// Ingest puts docs into the store (a rag-ingest step): each is skipped when its
// content hash is unchanged, else chunked, embedded and replaced. Nothing is
// deleted. The error is the first document's that failed, after all were tried.
func (p *Pipeline) Ingest(ctx context.Context, docs []rag.Document) (Result, error) {
	st, _, _, err := p.parts3()
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	if err := p.loadHashes(ctx, st); err != nil {
		return Result{}, err
	}
	b := p.newBatch(ctx, p.hash, false)
	for _, d := range docs {
		if strings.HasPrefix(d.ID, FilePrefix) {
			b.fail(d, fmt.Errorf("document id %q: ids starting with %q are reserved for the pipeline's source", d.ID, FilePrefix))
			continue
		}
		if err := b.add(d); err != nil {
			break
		}
	}
	res := b.wait()
	res.Took = time.Since(start)
	p.refreshChunks(ctx, st, false)
	if res.Errors > 0 {
		return res, b.firstErr
	}
	return res, ctx.Err()
}

// chunkRefreshInterval bounds how often rag-ingest steps recount the store's
// chunks for /metrics: a pgvector count is a query, and a stream of small
// ingests must not pay one each.
const chunkRefreshInterval = 5 * time.Second

// refreshChunks recounts the store's chunks for /metrics: always after a source
// ingest, at most every chunkRefreshInterval otherwise.
func (p *Pipeline) refreshChunks(ctx context.Context, st rag.Store, always bool) {
	p.hashMu.Lock()
	due := always || time.Since(p.chunksCounted) >= chunkRefreshInterval
	if due {
		p.chunksCounted = time.Now()
	}
	p.hashMu.Unlock()
	if !due {
		return
	}
	if s, err := st.Stats(ctx); err == nil {
		p.chunks.Store(int64(s.Chunks))
	}
}

// The content hashes of the stored documents are kept in memory for rag-ingest
// steps, which would otherwise read every document's hash from the store for
// each exchange. They are read from the store on the first rag-ingest and at
// every source ingest, and follow this pipeline's own writes; a document another
// Helix changed in a shared pgvector table in between is at worst written again.

func (p *Pipeline) loadHashes(ctx context.Context, st rag.Store) error {
	p.hashMu.Lock()
	loaded := p.hashes != nil
	p.hashMu.Unlock()
	if loaded {
		return nil
	}
	known, err := st.Documents(ctx)
	if err != nil {
		return fmt.Errorf("read the store's documents: %w", err)
	}
	p.setHashes(known)
	return nil
}

func (p *Pipeline) setHashes(known map[string]string) {
	m := make(map[string]string, len(known))
	for k, v := range known {
		m[k] = v
	}
	p.hashMu.Lock()
	p.hashes = m
	p.hashMu.Unlock()
}

// setHash records a written document's hash ("" for a deleted one).
func (p *Pipeline) setHash(id, hash string) {
	p.hashMu.Lock()
	defer p.hashMu.Unlock()
	if p.hashes == nil {
		return // not loaded yet: the next load reads the store
	}
	if hash == "" {
		delete(p.hashes, id)
	} else {
		p.hashes[id] = hash
	}
}

func (p *Pipeline) hash(id string) string {
	p.hashMu.Lock()
	defer p.hashMu.Unlock()
	return p.hashes[id]
}

func (p *Pipeline) setProgress(f func(*Progress)) {
	p.progressMu.Lock()
	f(&p.progress)
	p.progressMu.Unlock()
}

// batch runs documents through chunk → embed → store on the pipeline's workers.
type batch struct {
	p        *Pipeline
	ctx      context.Context
	known    func(id string) string // the stored hash of a document, "" if none
	tracked  bool                   // report progress (source ingest)
	work     chan rag.Document
	wg       sync.WaitGroup
	mu       sync.Mutex
	res      Result
	seen     map[string]bool
	firstErr error
	lastLog  time.Time
}

func (p *Pipeline) newBatch(ctx context.Context, known func(string) string, tracked bool) *batch {
	b := &batch{p: p, ctx: ctx, known: known, tracked: tracked, work: make(chan rag.Document, workQueue), seen: map[string]bool{}, lastLog: time.Now()}
	for range p.opts.Workers {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for d := range b.work {
				b.process(b.gather(d))
			}
		}()
	}
	return b
}

// add hands d to a worker, or counts it skipped when its hash is unchanged.
func (b *batch) add(d rag.Document) error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.seen[d.ID] {
		b.mu.Unlock()
		b.fail(d, fmt.Errorf("document id %q appears twice", d.ID))
		return nil
	}
	b.seen[d.ID] = true
	b.res.Seen++
	unchanged := b.known(d.ID) == d.Hash()
	if unchanged {
		b.res.Skipped++
	}
	b.mu.Unlock()
	b.report(d.ID)
	if unchanged {
		return nil
	}
	select {
	case b.work <- d:
		return nil
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
}

// embedBatchTexts is how many chunk texts a worker gathers, from as many
// documents as are waiting, before one Embed call: an embeddings API answers a
// request of many texts about as fast as one of a few, so small documents must
// not cost a request each.
const embedBatchTexts = 128

// workQueue is how many documents wait for a worker: while the workers embed
// or wait for the store, the next batch gathers.
const workQueue = 256

// storeBatchDocs is how many documents a worker gathers at most for one
// PutBatch when the store takes batches ([rag.BatchStore]) and there is no
// embedder to batch for: a store that fsyncs per commit shares one fsync
// among them, where one Put each would cost one each.
const storeBatchDocs = 128

// prepared is a document cut into chunks, waiting for its vectors.
type prepared struct {
	doc    rag.Document
	chunks []rag.Chunk
}

// gather chunks d and the documents already waiting behind it, until they hold
// embedBatchTexts chunks (or storeBatchDocs documents) or none is waiting (a
// trickle of rag-ingest exchanges is never held back). It gathers when there
// is an embedder to batch for or a store that takes batches. Documents that
// fail to chunk are reported here.
func (b *batch) gather(d rag.Document) []prepared {
	st, emb, ch, err := b.p.parts3()
	if err != nil {
		b.fail(d, err)
		return nil
	}
	_, batches := st.(rag.BatchStore)
	var out []prepared
	texts := 0
	add := func(d rag.Document) {
		chunks, err := ch.Chunk(b.ctx, d)
		if err != nil {
			if b.ctx.Err() == nil {
				b.fail(d, fmt.Errorf("chunk: %w", err))
			}
			return
		}
		out = append(out, prepared{doc: d, chunks: chunks})
		texts += len(chunks)
	}
	add(d)
	for (emb != nil || batches) && texts < embedBatchTexts && len(out) < storeBatchDocs {
		select {
		case next, ok := <-b.work:
			if !ok {
				return out
			}
			add(next)
		default:
			return out
		}
	}
	return out
}

// process embeds the gathered documents' chunks in one call and stores each
// document. When the shared call fails, each document is embedded on its own, so
// that one bad document fails alone.
func (b *batch) process(docs []prepared) {
	if len(docs) == 0 {
		return
	}
	vecs, err := b.p.embed(b.ctx, docs)
	if err != nil && len(docs) > 1 && b.ctx.Err() == nil {
		for _, d := range docs {
			b.process([]prepared{d})
		}
		return
	}
	var errs []error
	if err == nil && len(docs) > 1 {
		errs = b.p.putBatch(b.ctx, docs, vecs)
	}
	for i, d := range docs {
		if errs != nil {
			err = errs[i]
		} else if err == nil {
			err = b.p.put(b.ctx, d, vecs[i])
		}
		if err != nil {
			if b.ctx.Err() == nil {
				b.fail(d.doc, err)
			}
			err = nil
			continue
		}
		b.p.docsIngested.Add(1)
		b.mu.Lock()
		b.res.Ingested++
		b.res.Chunks += len(d.chunks)
		b.mu.Unlock()
		b.report("")
	}
}

func (b *batch) fail(d rag.Document, err error) {
	b.p.ingestErrors.Add(1)
	b.p.logger.Warn("pipeline: a document was not ingested", "doc", d.ID, "source", d.Source, "err", err)
	b.mu.Lock()
	b.res.Errors++
	if b.firstErr == nil {
		b.firstErr = fmt.Errorf("document %s: %w", d.ID, err)
	}
	b.mu.Unlock()
}

// report publishes progress and logs it every ProgressInterval.
func (b *batch) report(current string) {
	if !b.tracked {
		return
	}
	b.mu.Lock()
	res := b.res
	logNow := time.Since(b.lastLog) >= b.p.opts.ProgressInterval
	if logNow {
		b.lastLog = time.Now()
	}
	b.mu.Unlock()
	b.p.setProgress(func(pr *Progress) {
		pr.Result = res
		if current != "" {
			pr.Current = current
		}
	})
	if logNow {
		b.p.logger.Info("pipeline ingest progress", "documents", res.Seen, "ingested", res.Ingested,
			"skipped", res.Skipped, "errors", res.Errors, "chunks", res.Chunks)
	}
}

func (b *batch) wait() Result {
	close(b.work)
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.res
}

// embed returns the vectors of each document's chunks (nil ones without an
// embedder), from one Embed call.
func (p *Pipeline) embed(ctx context.Context, docs []prepared) ([][][]float32, error) {
	out := make([][][]float32, len(docs))
	_, emb, _, err := p.parts3()
	if err != nil || emb == nil {
		return out, err
	}
	var texts []string
	for _, d := range docs {
		for _, c := range d.chunks {
			texts = append(texts, c.Text)
		}
	}
	if len(texts) == 0 {
		return out, nil
	}
	vecs, err := emb.Embed(ctx, texts, rag.EmbedDocument)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("embed: %d vectors for %d chunks", len(vecs), len(texts))
	}
	for i, d := range docs {
		out[i], vecs = vecs[:len(d.chunks):len(d.chunks)], vecs[len(d.chunks):]
	}
	return out, nil
}

// put replaces d's chunks in the store.
func (p *Pipeline) put(ctx context.Context, d prepared, vecs [][]float32) error {
	st, _, _, err := p.parts3()
	if err != nil {
		return err
	}
	hash := d.doc.Hash()
	if err := st.Put(ctx, d.doc.ID, hash, d.chunks, vecs); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	p.setHash(d.doc.ID, hash)
	return nil
}

// putBatch stores docs with one PutBatch when the store takes batches,
// returning each document's error; nil when it does not (the caller puts them
// one by one).
func (p *Pipeline) putBatch(ctx context.Context, docs []prepared, vecs [][][]float32) []error {
	st, _, _, err := p.parts3()
	if err != nil {
		return nil
	}
	bs, ok := st.(rag.BatchStore)
	if !ok {
		return nil
	}
	batch := make([]rag.PutDoc, len(docs))
	for i, d := range docs {
		batch[i] = rag.PutDoc{ID: d.doc.ID, Hash: d.doc.Hash(), Chunks: d.chunks, Vectors: vecs[i]}
	}
	errs := bs.PutBatch(ctx, batch)
	if len(errs) != len(docs) {
		// A store that breaks PutBatch's contract: nothing is known to be
		// stored, and every document says so.
		bad := fmt.Errorf("store: PutBatch returned %d results for %d documents", len(errs), len(docs))
		errs = make([]error, len(docs))
		for i := range errs {
			errs[i] = bad
		}
		return errs
	}
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("store: %w", err)
			continue
		}
		p.setHash(batch[i].ID, batch[i].Hash)
	}
	return errs
}

var errNotAvailable = errors.New("not available in this build")
