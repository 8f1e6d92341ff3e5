package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/testtools"
)

// rag pg-scale fills a table with synthetic chunks, times keyword queries with
// hits, reports the table's size and drops its tables; with a filter every
// query still finds hits (the filter applies before ranking).
func TestPgScale(t *testing.T) {
	url := testtools.PostgresURL(t)
	t.Setenv(postgresEnv, url)
	for _, filter := range []string{"", "tenant=t3"} {
		var stdout bytes.Buffer
		args := []string{"--chunks", "60", "--queries", "5", "--workers", "2"}
		if filter != "" {
			args = append(args, "--filter", filter)
		}
		if err := run(context.Background(), append([]string{"pg-scale"}, args...), &stdout); err != nil {
			t.Fatal(err)
		}
		var res pgScaleResult
		must(t, json.Unmarshal(stdout.Bytes(), &res))
		if res.Chunks != 60 || res.Queries != 5 || res.IngestPerSec <= 0 || res.MeanHits <= 0 || res.P99ms <= 0 || res.TableMiB <= 0 || res.Filter != filter {
			t.Errorf("result = %+v", res)
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	defer conn.Close(ctx)
	var left int
	prefix := fmt.Sprintf("helix_bench_rag_%d_", os.Getpid())
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE starts_with(tablename, $1)`, prefix).Scan(&left))
	if left != 0 {
		t.Errorf("%d benchmark tables left behind", left)
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"pg-scale", "--filter", "nokey"}, &stdout); err == nil || !strings.Contains(err.Error(), "KEY=VALUE") {
		t.Errorf("--filter nokey: %v", err)
	}
}
