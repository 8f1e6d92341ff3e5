package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/ragsynth"
	"github.com/arvenza/helix/internal/rag/store/pgvector"
)

// pgScaleResult is what `rag pg-scale` measures: the pgvector store's keyword
// arm (BM25 in SQL) on ragsynth's corpus at one size.
type pgScaleResult struct {
	Chunks        int     `json:"chunks"`
	Table         string  `json:"table"`
	IngestSeconds float64 `json:"ingest_seconds,omitempty"`
	IngestPerSec  float64 `json:"ingest_docs_per_sec,omitempty"`
	Queries       int     `json:"queries"`
	Filter        string  `json:"filter,omitempty"`
	P50ms         float64 `json:"p50_ms"`
	P99ms         float64 `json:"p99_ms"`
	MeanMs        float64 `json:"mean_ms"`
	// ServerCPUms is the PostgreSQL server's CPU time per query (every process
	// of the server: run it on a server of its own), the cost that does not
	// depend on what else the machine runs.
	ServerCPUms float64 `json:"server_cpu_ms_per_query,omitempty"`
	// ClientCPUms is this process's CPU time per query (the store's scoring).
	ClientCPUms float64 `json:"client_cpu_ms_per_query"`
	MeanHits    float64 `json:"mean_hits"`
	TableMiB    float64 `json:"table_mib"`
}

// pgScale fills (or reuses, with --table) a pgvector table with ragsynth's
// chunks and times keyword queries against it.
//
//	rag pg-scale --chunks 100000 --queries 1000 [--table NAME --keep] [--pg-data DIR]
func pgScale(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rag pg-scale", flag.ContinueOnError)
	fs.SetOutput(out)
	chunks := fs.Int("chunks", 100_000, "synthetic chunks in the table")
	queries := fs.Int("queries", 1000, "keyword queries timed (after 50 warm-up ones)")
	n := fs.Int("n", 10, "hits asked per query")
	table := fs.String("table", "", "table base name to fill or reuse (default a fresh one, dropped after unless --keep)")
	keep := fs.Bool("keep", false, "keep the table for another run")
	workers := fs.Int("workers", 4, "concurrent writers while filling")
	filter := fs.String("filter", "", "KEY=VALUE metadata filter on every query, e.g. tenant=t3")
	pgData := fs.String("pg-data", os.Getenv("HELIX_PG_DATA"), "the server's data directory, to read its processes' CPU time (postmaster.pid)")
	outFile := fs.String("out", "", "write the result as JSON to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed queries to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *chunks <= 0 || *queries <= 0 || *n <= 0 || *workers <= 0 {
		return errors.New("pg-scale: --chunks, --queries, --n and --workers must be positive")
	}
	var f rag.Filter
	if *filter != "" {
		k, v, ok := strings.Cut(*filter, "=")
		if !ok {
			return fmt.Errorf("--filter %q: want KEY=VALUE", *filter)
		}
		f = rag.Filter{k: v}
	}
	dsn := os.Getenv(postgresEnv)
	if dsn == "" {
		return fmt.Errorf("pg-scale needs $%s (eval \"$(make -s postgres-start)\")", postgresEnv)
	}
	name := *table
	if name == "" {
		name = benchTable()
	}
	st, err := pgvector.Open(ctx, pgvector.Options{DSN: dsn, Table: name})
	if err != nil {
		return err
	}
	defer st.Close()
	if !*keep && *table == "" {
		defer func() { _ = dropTables(dsn, name) }()
	}
	res := pgScaleResult{Chunks: *chunks, Table: name, Queries: *queries, Filter: *filter}
	gen := ragsynth.New(ragsynth.Config{Seed: 1})

	stats, err := st.Stats(ctx)
	if err != nil {
		return err
	}
	if stats.Chunks < *chunks {
		start := time.Now()
		var next atomic.Int64
		next.Store(int64(stats.Documents))
		var wg sync.WaitGroup
		errs := make(chan error, *workers)
		for range *workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= *chunks || ctx.Err() != nil {
						return
					}
					if err := st.Put(ctx, ragsynth.DocID(i), "h", gen.Chunks(i), nil); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := errors.Join(<-errs, ctx.Err()); err != nil {
			return err
		}
		res.IngestSeconds = time.Since(start).Seconds()
		res.IngestPerSec = float64(*chunks-stats.Documents) / res.IngestSeconds
		// What autovacuum would do in time: statistics for the planner and
		// the visibility map of the index-only scans.
		if err := vacuum(ctx, dsn, name); err != nil {
			return err
		}
	}
	for i := range 50 {
		if _, err := st.SearchKeyword(ctx, gen.Query(1_000_000+i).Text, *n, f); err != nil {
			return err
		}
	}
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = pf.Close() }()
	}
	cpu0, cpuErr := serverCPU(*pgData)
	own0 := processCPU()
	lat := make([]float64, *queries)
	hits := 0
	for i := range *queries {
		q := gen.Query(i).Text
		t0 := time.Now()
		h, err := st.SearchKeyword(ctx, q, *n, f)
		if err != nil {
			return fmt.Errorf("query %q: %w", q, err)
		}
		lat[i] = float64(time.Since(t0).Microseconds()) / 1000
		hits += len(h)
	}
	res.ClientCPUms = float64(processCPU()-own0) / float64(time.Millisecond) / float64(*queries)
	if cpu1, err := serverCPU(*pgData); err == nil && cpuErr == nil {
		res.ServerCPUms = float64(cpu1-cpu0) / float64(*queries)
	}
	slices.Sort(lat)
	var sum float64
	for _, l := range lat {
		sum += l
	}
	res.P50ms, res.P99ms, res.MeanMs = percentile(lat, 50), percentile(lat, 99), sum/float64(len(lat))
	res.MeanHits = float64(hits) / float64(*queries)
	res.TableMiB, _ = tableMiB(ctx, dsn, name)
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if *outFile != "" {
		if err := os.WriteFile(*outFile, b, 0o644); err != nil {
			return err
		}
	}
	_, err = out.Write(b)
	return err
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func vacuum(ctx context.Context, dsn, table string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, suffix := range []string{"_terms", "_df", "_bm25_stats", "_chunks", "_documents"} {
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+pgx.Identifier{table + suffix}.Sanitize()); err != nil {
			return err
		}
	}
	return nil
}

func tableMiB(ctx context.Context, dsn, table string) (float64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var total int64
	for _, suffix := range []string{"_terms", "_df", "_bm25_stats", "_chunks", "_documents"} {
		var b int64
		if err := conn.QueryRow(ctx, "SELECT pg_total_relation_size($1::regclass)", pgx.Identifier{table + suffix}.Sanitize()).Scan(&b); err != nil {
			return 0, err
		}
		total += b
	}
	return float64(total) / (1 << 20), nil
}

// serverCPU is the CPU time in milliseconds of the PostgreSQL server's
// processes: the postmaster of dataDir and its children (Linux /proc).
func serverCPU(dataDir string) (int64, error) {
	if dataDir == "" {
		return 0, errors.New("no data directory")
	}
	pidFile, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	root := strings.TrimSpace(strings.SplitN(string(pidFile), "\n", 2)[0])
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state ppid … utime(14) stime(15).
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 || (e.Name() != root && f[1] != root) {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + k
	}
	return ticks * 10, nil // USER_HZ is 100 on Linux
}
