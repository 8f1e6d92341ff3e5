//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/testtools"
)

// The hybrid path with the random ONNX model: the mechanics (vectors stored,
// query embedded, both arms fused), and the embedder's time measured apart.
func TestRunHybridRandomModel(t *testing.T) {
	lib := testtools.ONNXRuntimeLib(t)
	var stdout bytes.Buffer
	args := []string{"--data", writeTinyBEIR(t), "--nosync", "--strategy", "hybrid", "--chunk", "recursive", "--embed", "onnx-random", "--onnx-lib", lib}
	if err := run(context.Background(), args, &stdout); err != nil {
		t.Fatal(err)
	}
	var res Result
	must(t, json.Unmarshal(stdout.Bytes(), &res))
	if res.Setup.Embedder == "" || res.Ingest.EmbedSeconds <= 0 || res.Ingest.EmbedDocsPerSec <= 0 || res.Counts.Queries != 3 {
		t.Errorf("result = %+v", res)
	}
	// Four documents: every one is within the top 100 of the fused list.
	if res.Quality.Recall100 != 1 {
		t.Errorf("recall@100 = %v, want 1", res.Quality.Recall100)
	}
}

// The pgvector store: keyword search in SQL, and the benchmark's tables dropped
// afterwards.
func TestRunPgvector(t *testing.T) {
	url := testtools.PostgresURL(t)
	t.Setenv(postgresEnv, url)
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"--data", writeTinyBEIR(t), "--store", "pgvector"}, &stdout); err != nil {
		t.Fatal(err)
	}
	var res Result
	must(t, json.Unmarshal(stdout.Bytes(), &res))
	if res.Setup.Store != "pgvector" || res.Counts.Chunks != 4 || res.Quality.Recall100 != 1 {
		t.Errorf("result = %+v", res)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	defer conn.Close(ctx)
	var left int
	// This process's tables only (benchTable names them by pid).
	prefix := fmt.Sprintf("helix_bench_rag_%d_", os.Getpid())
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE starts_with(tablename, $1)`, prefix).Scan(&left))
	if left != 0 {
		t.Errorf("%d benchmark tables left behind", left)
	}
}

// A YAML pipeline with an onnx rag-embed step and a pgvector store: the
// pipeline's own embedder is timed, and the configured table is never touched
// (the benchmark uses a fresh one and drops it).
func TestRunPipelineWithEmbedder(t *testing.T) {
	lib := testtools.ONNXRuntimeLib(t)
	url := testtools.PostgresURL(t)
	dir := t.TempDir()
	ds, err := LoadDataset(writeTinyBEIR(t), "test")
	must(t, err)
	model, err := writeRandomModel(ds, dir)
	must(t, err)
	yaml := filepath.Join(dir, "helix.yaml")
	must(t, os.WriteFile(yaml, []byte(fmt.Sprintf(`
pipelines:
  - id: kb
    steps:
      - rag-embed: {provider: onnx, model_path: %q, library_path: %q}
      - rag-store: {store: pgvector, dsn: %q, table: users_table}
      - rag-retrieve: {strategy: hybrid}
`, model, lib, url)), 0o644))
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"--data", writeTinyBEIR(t), "--config", yaml, "--pipeline", "kb"}, &stdout); err != nil {
		t.Fatal(err)
	}
	var res Result
	must(t, json.Unmarshal(stdout.Bytes(), &res))
	if res.Setup.Store != "pgvector" || res.Setup.Strategy != "hybrid" || res.Ingest.EmbedSeconds <= 0 || res.Quality.Recall100 != 1 {
		t.Errorf("result = %+v", res)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	defer conn.Close(ctx)
	var n int
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE starts_with(tablename, 'users_table') OR starts_with(tablename, $1)`,
		fmt.Sprintf("helix_bench_rag_%d_", os.Getpid())).Scan(&n))
	if n != 0 {
		t.Errorf("%d tables left (the configured table must not be created, the benchmark's must be dropped)", n)
	}
}
