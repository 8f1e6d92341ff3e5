package main

// The scale benchmark (rag scale): the embedded store at growing sizes of a
// synthetic corpus (internal/rag/ragsynth), and BEIR nDCG@10 of the embedded and
// pgvector keyword arms, side by side in one run, printed as one table and
// written as JSON and Markdown.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/ragsynth"
	"github.com/arvenza/helix/internal/rag/store/embedded"
)

// scaleOptions are rag scale's command line.
type scaleOptions struct {
	Sizes    []int
	Modes    []string // keyword (no vectors), vectors (384-dim vectors, hybrid queries too)
	Queries  int
	Workers  int
	Seed     uint64
	Batch    int
	PutBatch int
	BEIR     string
	Datasets []string
	Out      string
	TmpDir   string
	Label    string
	NoSync   bool
}

// ScaleReport is the whole run, written as scale.json.
type ScaleReport struct {
	Label     string     `json:"label,omitempty"`
	Started   string     `json:"started"`
	GoVersion string     `json:"go_version"`
	CPUs      int        `json:"cpus"`
	LoadAvg   string     `json:"load_average"`
	Seed      uint64     `json:"seed"`
	Rows      []ScaleRow `json:"rows"`
	BEIR      []BEIRRow  `json:"beir,omitempty"`
	// Skipped says what was left out and why (no BEIR data, no PostgreSQL).
	Skipped []string `json:"skipped,omitempty"`
}

// ScaleRow is one store size and mode.
type ScaleRow struct {
	Chunks  int  `json:"chunks"`
	Vectors bool `json:"vectors"`
	Dim     int  `json:"dim,omitempty"`
	Workers int  `json:"workers"`
	// PutBatch is the documents per PutBatch call; 1 when the store has no
	// PutBatch (or --put-batch 1) and each document is one Put.
	PutBatch int  `json:"put_batch"`
	Sync     bool `json:"fsync"`
	// Ingest: the time spent in Store.Put by Workers goroutines (generating the
	// documents is not counted), and the process's CPU over it.
	IngestSeconds  float64 `json:"ingest_seconds"`
	DocsPerSec     float64 `json:"docs_per_sec"`
	ChunksPerSec   float64 `json:"chunks_per_sec"`
	IngestCPUUsPer float64 `json:"ingest_cpu_us_per_doc"`
	OpenSeconds    float64 `json:"open_seconds"`
	// IndexSeconds is how long after the reopen the store's background build
	// of its approximate vector index took to finish (vectors only): the
	// queries are timed after it, as a store serves once it has one.
	IndexSeconds float64 `json:"vector_index_seconds,omitempty"`
	// OpenCPUSeconds is the process CPU of the open: on a shared machine the
	// wall time also waits for the disk and for CPUs others hold.
	OpenCPUSeconds  float64 `json:"open_cpu_seconds"`
	HeapMiB         float64 `json:"heap_mib"`
	RSSMiB          float64 `json:"rss_mib"`
	DiskMiB         float64 `json:"disk_mib"`
	Keyword         Latency `json:"keyword"`
	KeywordCPUUsPer float64 `json:"keyword_cpu_us_per_query"`
	Hybrid          Latency `json:"hybrid"`
	HybridCPUUsPer  float64 `json:"hybrid_cpu_us_per_query,omitempty"`
	EmptyQueries    int     `json:"empty_keyword_queries"`
	Queries         int     `json:"queries"`
	// PeakRSSMiB is the row's own peak (the process's peak is reset before it,
	// where the kernel allows): the ingest's, as a rule.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
}

// BEIRRow is one keyword-arm evaluation.
type BEIRRow struct {
	Dataset string  `json:"dataset"`
	Store   string  `json:"store"`
	NDCG10  float64 `json:"ndcg_at_10"`
	P99Ms   float64 `json:"query_p99_ms"`
	DocsSec float64 `json:"docs_per_sec"`
}

func parseScaleFlags(args []string, out io.Writer) (scaleOptions, error) {
	o := scaleOptions{}
	var sizes, modes, datasets string
	fs := flag.NewFlagSet("rag scale", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&sizes, "sizes", "10000,100000,1000000", "store sizes in chunks, comma-separated")
	fs.StringVar(&modes, "modes", "keyword,vectors", "keyword (no vectors: ingest and keyword queries), vectors (384-dim vectors: ingest, keyword and hybrid queries)")
	fs.IntVar(&o.Queries, "queries", 1000, "queries per kind and size, one at a time")
	fs.IntVar(&o.Workers, "workers", 4, "concurrent Put callers (a pipeline's default workers)")
	fs.Uint64Var(&o.Seed, "seed", 1, "the synthetic corpus's seed")
	fs.IntVar(&o.Batch, "batch", 10000, "documents generated ahead of the timed puts (memory bound)")
	fs.IntVar(&o.PutBatch, "put-batch", 128, "documents per PutBatch call when the store takes batches (rag.BatchStore), as a pipeline's workers hand over the documents waiting; 1: one Put each")
	fs.StringVar(&o.BEIR, "beir", "", "folder holding the BEIR collections (scifact/, nfcorpus/): adds nDCG@10 of the keyword arms")
	fs.StringVar(&datasets, "datasets", "scifact,nfcorpus", "BEIR collections of --beir")
	fs.StringVar(&o.Out, "out", "", "directory for scale.json and scale.md (created)")
	fs.StringVar(&o.TmpDir, "tmp", "", "parent of the stores' temporary directories (default the system's; a million chunks take GBs)")
	fs.StringVar(&o.Label, "label", "", "name of the run, copied into the report")
	fs.BoolVar(&o.NoSync, "nosync", false, "embedded store: no fsync per write (the default is to sync)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (all options are flags)", fs.Arg(0))
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("--sizes %q: want positive counts of chunks, e.g. 10000,100000", sizes)
		}
		o.Sizes = append(o.Sizes, n)
	}
	for _, m := range strings.Split(modes, ",") {
		m = strings.TrimSpace(m)
		if m != "keyword" && m != "vectors" {
			return o, fmt.Errorf("--modes %q: want keyword, vectors or both", modes)
		}
		o.Modes = append(o.Modes, m)
	}
	if datasets != "" {
		o.Datasets = strings.Split(datasets, ",")
	}
	if o.Queries <= 0 || o.Workers <= 0 || o.Batch <= 0 || o.PutBatch <= 0 {
		return o, errors.New("--queries, --workers, --batch and --put-batch must be positive")
	}
	return o, nil
}

// runScale is rag scale.
func runScale(ctx context.Context, args []string, out, progress io.Writer) error {
	o, err := parseScaleFlags(args, out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	rep := &ScaleReport{Label: o.Label, Started: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(),
		CPUs: runtime.NumCPU(), LoadAvg: loadAvg(), Seed: o.Seed}
	gen := ragsynth.New(ragsynth.Config{Seed: o.Seed})
	for _, n := range o.Sizes {
		for _, m := range o.Modes {
			vectors := m == "vectors"
			if err := checkScaleDisk(o.TmpDir, n, vectors); err != nil {
				return errors.Join(fmt.Errorf("%d chunks, %s: %w", n, m, err), writeScaleReport(o, rep))
			}
			fmt.Fprintf(progress, "rag scale: %d chunks, %s\n", n, m)
			row, err := scaleRow(ctx, o, gen, n, vectors, progress)
			if err != nil {
				// The rows done so far are kept: a run of an hour is not lost to
				// its last row.
				return errors.Join(fmt.Errorf("%d chunks, %s: %w", n, m, err), writeScaleReport(o, rep))
			}
			rep.Rows = append(rep.Rows, row)
			if err := writeScaleReport(o, rep); err != nil {
				return err
			}
		}
	}
	if o.BEIR == "" {
		rep.Skipped = append(rep.Skipped, "BEIR nDCG@10: no --beir folder (BEIR_DATA)")
	} else if err := scaleBEIR(ctx, o, rep, progress); err != nil {
		return errors.Join(err, writeScaleReport(o, rep))
	}
	if err := writeScaleReport(o, rep); err != nil {
		return err
	}
	_, err = io.WriteString(out, scaleMarkdown(rep))
	return err
}

// writeScaleReport writes the report as it stands into --out (nothing without
// one): after every row, so that what a long run measured survives its end.
func writeScaleReport(o scaleOptions, rep *ScaleReport) error {
	if o.Out == "" {
		return nil
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{"scale.json": append(b, '\n'), "scale.md": []byte(scaleMarkdown(rep)), "scale.tsv": []byte(scaleTSV(rep))}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(o.Out, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// scaleDiskPerChunk is what a row needs on disk per chunk, with room for a
// compaction's copy beside the log: measured at 100k chunks, about 1.8 KiB of log
// and index per chunk keyword-only and 4.8 KiB with 384-dim vectors, doubled.
func scaleDiskPerChunk(vectors bool) int64 {
	if vectors {
		return 10 << 10
	}
	return 4 << 10
}

// checkScaleDisk refuses a row the disk under dir cannot hold (with 1 GiB to
// spare), before it starts, rather than failing an hour in with the disk full
// for everyone on the machine.
func checkScaleDisk(dir string, chunks int, vectors bool) error {
	if dir == "" {
		dir = os.TempDir()
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil // cannot tell: try
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	need := int64(chunks)*scaleDiskPerChunk(vectors) + 1<<30
	if free < need {
		return fmt.Errorf("%s has %.1f GiB free and this row needs about %.1f GiB: free some space or point --tmp (TMPDIR) elsewhere",
			dir, float64(free)/(1<<30), float64(need)/(1<<30))
	}
	return nil
}

// resetPeakRSS starts the process's peak resident memory (VmHWM) afresh, so
// that each row reports its own; a kernel that does not allow it leaves the
// peak of the whole run so far.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// scaleRow fills a fresh store with n synthetic chunks, reopens it and queries it.
func scaleRow(ctx context.Context, o scaleOptions, gen *ragsynth.Generator, n int, vectors bool, progress io.Writer) (ScaleRow, error) {
	row := ScaleRow{Chunks: n, Vectors: vectors, Workers: o.Workers, Sync: !o.NoSync}
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	if vectors {
		row.Dim = gen.Config().Dim
	}
	dir, err := os.MkdirTemp(o.TmpDir, "helix-rag-scale-")
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	st, err := embedded.Open(dir, embedded.Options{NoSync: o.NoSync})
	if err != nil {
		return row, err
	}
	row.PutBatch = 1
	if _, ok := any(st).(rag.BatchStore); ok {
		row.PutBatch = o.PutBatch
	}
	took, cpu, err := scaleIngest(ctx, st, gen, n, vectors, o.Workers, o.Batch, row.PutBatch, progress)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return row, err
	}
	row.IngestSeconds = took.Seconds()
	row.DocsPerSec = float64(n) / took.Seconds()
	row.ChunksPerSec = row.DocsPerSec // one chunk per synthetic document
	row.IngestCPUUsPer = float64(cpu.Microseconds()) / float64(n)
	row.DiskMiB = float64(dirBytes(dir)) / (1 << 20)

	// Reopen: the open time, and the memory of the store as it serves (without
	// the garbage of the ingest).
	runtime.GC()
	debug.FreeOSMemory()
	t0, c0 := time.Now(), cpuTime()
	st, err = embedded.Open(dir, embedded.Options{NoSync: o.NoSync})
	if err != nil {
		return row, fmt.Errorf("reopen: %w", err)
	}
	defer st.Close()
	row.OpenSeconds = time.Since(t0).Seconds()
	row.OpenCPUSeconds = (cpuTime() - c0).Seconds()
	if s, err := st.Stats(ctx); err != nil || s.Chunks != n {
		return row, fmt.Errorf("the reopened store holds %d chunks, want %d (%v)", s.Chunks, n, err)
	}
	if vectors {
		t0 := time.Now()
		if err := st.WaitVectorIndex(ctx); err != nil {
			return row, fmt.Errorf("waiting for the vector index: %w", err)
		}
		row.IndexSeconds = time.Since(t0).Seconds()
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	row.HeapMiB = float64(ms.HeapAlloc) / (1 << 20)
	row.RSSMiB = statusMiB("VmRSS:")

	queries := make([]ragsynth.Query, o.Queries)
	emb := queryEmbedder{vecs: make(map[string][]float32, o.Queries), dim: gen.Config().Dim}
	for i := range queries {
		queries[i] = gen.Query(i)
		emb.vecs[queries[i].Text] = queries[i].Vector
	}
	var empty int
	row.Keyword, row.KeywordCPUUsPer, err = timeQueries(ctx, queries, func(q ragsynth.Query) error {
		hits, err := rag.Retrieve(ctx, st, nil, rag.Query{Text: q.Text, Strategy: rag.StrategyKeyword, TopK: 10})
		if len(hits) == 0 {
			empty++
		}
		return err
	})
	if err != nil {
		return row, fmt.Errorf("keyword queries: %w", err)
	}
	row.EmptyQueries, row.Queries = empty, len(queries)
	if vectors {
		row.Hybrid, row.HybridCPUUsPer, err = timeQueries(ctx, queries, func(q ragsynth.Query) error {
			_, err := rag.Retrieve(ctx, st, emb, rag.Query{Text: q.Text, Strategy: rag.StrategyHybrid, TopK: 10})
			return err
		})
		if err != nil {
			return row, fmt.Errorf("hybrid queries: %w", err)
		}
	}
	row.PeakRSSMiB = peakRSSMiB()
	return row, nil
}

// scaleIngest puts documents 0…n-1 with workers concurrent callers, a batch at
// a time: each batch is generated first, then put while the clock runs. It
// returns the time and the process CPU of the puts.
func scaleIngest(ctx context.Context, st rag.Store, gen *ragsynth.Generator, n int, vectors bool, workers, batch, putBatch int, progress io.Writer) (time.Duration, time.Duration, error) {
	type item = rag.PutDoc
	put := func(items []item) error {
		if bs, ok := st.(rag.BatchStore); ok && putBatch > 1 {
			for i, err := range bs.PutBatch(ctx, items) {
				if err != nil {
					return fmt.Errorf("put %s: %w", items[i].ID, err)
				}
			}
			return nil
		}
		for _, it := range items {
			if err := st.Put(ctx, it.ID, it.Hash, it.Chunks, it.Vectors); err != nil {
				return fmt.Errorf("put %s: %w", it.ID, err)
			}
		}
		return nil
	}
	var took, cpu time.Duration
	lastReport := time.Now()
	items := make([]item, 0, min(batch, n))
	for from := 0; from < n; from += batch {
		to := min(from+batch, n)
		items = items[:0]
		for i := from; i < to; i++ {
			d := gen.Document(i)
			it := item{ID: d.ID, Hash: d.Hash(), Chunks: gen.Chunks(i)}
			if vectors {
				it.Vectors = [][]float32{gen.Vector(i)}
			}
			items = append(items, it)
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, workers)
		c0, t0 := cpuTime(), time.Now()
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(int64(putBatch))) - putBatch
					if k >= len(items) {
						return
					}
					if err := put(items[k:min(k+putBatch, len(items))]); err != nil {
						errs[w] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		took += time.Since(t0)
		cpu += cpuTime() - c0
		if err := errors.Join(errs...); err != nil {
			return took, cpu, err
		}
		if time.Since(lastReport) >= 10*time.Second || to == n {
			lastReport = time.Now()
			fmt.Fprintf(progress, "rag scale: %d/%d chunks put, %.0f/s\n", to, n, float64(to)/took.Seconds())
		}
	}
	return took, cpu, nil
}

// timeQueries runs each query once, one at a time, and returns their latency
// percentiles and the process CPU per query.
func timeQueries(ctx context.Context, queries []ragsynth.Query, run func(ragsynth.Query) error) (Latency, float64, error) {
	lat := make([]float64, 0, len(queries))
	c0 := cpuTime()
	for _, q := range queries {
		if err := ctx.Err(); err != nil {
			return Latency{}, 0, err
		}
		t0 := time.Now()
		if err := run(q); err != nil {
			return Latency{}, 0, fmt.Errorf("%q: %w", q.Text, err)
		}
		lat = append(lat, float64(time.Since(t0).Nanoseconds())/1e6)
	}
	cpu := float64((cpuTime() - c0).Microseconds()) / float64(len(queries))
	slices.Sort(lat)
	var sum float64
	for _, l := range lat {
		sum += l
	}
	return Latency{P50Ms: percentile(lat, 50), P99Ms: percentile(lat, 99), MeanMs: sum / float64(len(lat)), MaxMs: lat[len(lat)-1]}, cpu, nil
}

// queryEmbedder answers the synthetic queries with their generated vectors.
type queryEmbedder struct {
	vecs map[string][]float32
	dim  int
}

func (e queryEmbedder) Embed(_ context.Context, texts []string, _ rag.EmbedKind) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := e.vecs[t]
		if !ok {
			return nil, fmt.Errorf("no vector for %q (not a generated query)", t)
		}
		out[i] = v
	}
	return out, nil
}

func (e queryEmbedder) Model() string { return "ragsynth:" + strconv.Itoa(e.dim) }

// scaleBEIR adds nDCG@10 of the keyword arms: the embedded store, and pgvector
// when HELIX_POSTGRES_URL is set.
func scaleBEIR(ctx context.Context, o scaleOptions, rep *ScaleReport, progress io.Writer) error {
	stores := []string{"embedded"}
	if os.Getenv(postgresEnv) != "" {
		stores = append(stores, "pgvector")
	} else {
		rep.Skipped = append(rep.Skipped, "BEIR pgvector keyword arm: $"+postgresEnv+" unset")
	}
	for _, name := range o.Datasets {
		dir := filepath.Join(o.BEIR, name)
		if _, err := os.Stat(filepath.Join(dir, "qrels", "test.tsv")); err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("BEIR %s: no %s", name, filepath.Join(dir, "qrels", "test.tsv")))
			continue
		}
		for _, store := range stores {
			fmt.Fprintf(progress, "rag scale: BEIR %s, %s keyword arm\n", name, store)
			res, err := evaluateOne(ctx, []string{"--data", dir, "--strategy", "keyword", "--chunk", "none", "--store", store, "--tmp", o.TmpDir})
			if err != nil {
				return fmt.Errorf("BEIR %s on %s: %w", name, store, err)
			}
			rep.BEIR = append(rep.BEIR, BEIRRow{Dataset: res.Dataset, Store: store, NDCG10: res.Quality.NDCG10, P99Ms: res.Query.P99Ms, DocsSec: res.Ingest.DocsPerSec})
		}
	}
	return nil
}

// scaleMarkdown is the report as one table (and the BEIR table).
func scaleMarkdown(rep *ScaleReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "RAG scale benchmark: embedded store, synthetic corpus (seed %d), %s, %d CPUs, load average %s at the start\n\n",
		rep.Seed, rep.GoVersion, rep.CPUs, rep.LoadAvg)
	b.WriteString("| chunks | vectors | ingest docs/s | chunks/s | CPU µs/doc | open s | open CPU s | vector index s | heap MiB | RSS MiB | peak RSS MiB | disk MiB | keyword p50 ms | keyword p99 ms | CPU µs/keyword query | hybrid p50 ms | hybrid p99 ms | CPU µs/hybrid query | keyword queries without a hit |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rep.Rows {
		vec, hp50, hp99, hcpu, index := "–", "–", "–", "–", "–"
		if r.Vectors {
			vec = fmt.Sprintf("%d-dim", r.Dim)
			index = fmt.Sprintf("%.1f", r.IndexSeconds)
			hp50, hp99, hcpu = fmt.Sprintf("%.2f", r.Hybrid.P50Ms), fmt.Sprintf("%.2f", r.Hybrid.P99Ms), fmt.Sprintf("%.0f", r.HybridCPUUsPer)
		}
		fmt.Fprintf(&b, "| %d | %s | %.0f | %.0f | %.0f | %.2f | %.2f | %s | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.0f | %s | %s | %s | %d/%d |\n",
			r.Chunks, vec, r.DocsPerSec, r.ChunksPerSec, r.IngestCPUUsPer, r.OpenSeconds, r.OpenCPUSeconds, index, r.HeapMiB, r.RSSMiB, r.PeakRSSMiB, r.DiskMiB,
			r.Keyword.P50Ms, r.Keyword.P99Ms, r.KeywordCPUUsPer, hp50, hp99, hcpu, r.EmptyQueries, r.Queries)
	}
	if len(rep.BEIR) > 0 {
		b.WriteString("\n| BEIR collection | keyword arm | nDCG@10 | query p99 ms | ingest docs/s |\n|---|---|---:|---:|---:|\n")
		for _, r := range rep.BEIR {
			fmt.Fprintf(&b, "| %s | %s | %.4f | %.2f | %.0f |\n", r.Dataset, r.Store, r.NDCG10, r.P99Ms, r.DocsSec)
		}
	}
	if len(rep.Skipped) > 0 {
		b.WriteString("\n")
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(&b, "skipped: %s\n", s)
	}
	return b.String()
}

// scaleTSV is the rows for scripts (scripts/bench-all.sh): a header line, then
// one line per row, tab-separated.
func scaleTSV(rep *ScaleReport) string {
	var b strings.Builder
	b.WriteString("chunks\tvectors\tdocs_per_sec\tkeyword_p50_ms\tkeyword_p99_ms\thybrid_p50_ms\thybrid_p99_ms\trss_mib\topen_s\n")
	for _, r := range rep.Rows {
		v := 0
		if r.Vectors {
			v = 1
		}
		fmt.Fprintf(&b, "%d\t%d\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%.0f\t%.3f\n", r.Chunks, v, r.DocsPerSec,
			r.Keyword.P50Ms, r.Keyword.P99Ms, r.Hybrid.P50Ms, r.Hybrid.P99Ms, r.RSSMiB, r.OpenSeconds)
	}
	for _, r := range rep.BEIR {
		fmt.Fprintf(&b, "# beir\t%s\t%s\t%.4f\n", r.Dataset, r.Store, r.NDCG10)
	}
	return b.String()
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// statusMiB reads a kB figure of /proc/self/status ("VmRSS:"); 0 where there
// is none.
func statusMiB(key string) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 0
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
