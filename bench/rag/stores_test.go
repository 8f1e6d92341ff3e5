//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
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
