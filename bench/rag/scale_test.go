package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rag scale at a tiny size: both modes, the BEIR keyword arm of a tiny
// collection, one table on stdout and the same as scale.json and scale.md.
func TestScaleTiny(t *testing.T) {
	dir := t.TempDir()
	beir := filepath.Join(dir, "beir")
	must(t, os.MkdirAll(beir, 0o755))
	must(t, os.Rename(writeTinyBEIR(t), filepath.Join(beir, "tiny")))
	out := filepath.Join(dir, "out")
	var stdout, progress bytes.Buffer
	err := runScale(context.Background(), []string{"--sizes", "150,300", "--queries", "20", "--batch", "100",
		"--tmp", dir, "--out", out, "--beir", beir, "--datasets", "tiny,missing"}, &stdout, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "scale.json"))
	must(t, err)
	var rep ScaleReport
	must(t, json.Unmarshal(b, &rep))
	if len(rep.Rows) != 4 {
		t.Fatalf("%d rows, want 4 (two sizes, two modes)", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.DocsPerSec <= 0 || r.OpenSeconds <= 0 || r.HeapMiB <= 0 || r.RSSMiB <= 0 || r.DiskMiB <= 0 ||
			r.Keyword.P99Ms < r.Keyword.P50Ms || r.Keyword.P50Ms <= 0 || r.Queries != 20 || r.EmptyQueries == r.Queries {
			t.Errorf("row %+v", r)
		}
		if r.Vectors != (r.Hybrid.P50Ms > 0) || (r.Vectors && r.Dim != 384) {
			t.Errorf("hybrid figures for a store with vectors only: %+v", r)
		}
	}
	if rep.Rows[0].Chunks != 150 || rep.Rows[3].Chunks != 300 || rep.Rows[0].Vectors || !rep.Rows[1].Vectors {
		t.Errorf("rows in the wrong order: %+v", rep.Rows)
	}
	wantBEIR := 1
	if os.Getenv(postgresEnv) != "" {
		wantBEIR = 2 // and the pgvector arm
	}
	if len(rep.BEIR) != wantBEIR || rep.BEIR[0].Store != "embedded" || rep.BEIR[0].NDCG10 <= 0.5 {
		t.Errorf("BEIR rows %+v", rep.BEIR)
	}
	if !strings.Contains(strings.Join(rep.Skipped, "\n"), "BEIR missing: no ") {
		t.Errorf("skipped %q", rep.Skipped)
	}
	tsv, err := os.ReadFile(filepath.Join(out, "scale.tsv"))
	must(t, err)
	if lines := strings.Split(strings.TrimSpace(string(tsv)), "\n"); len(lines) != 1+4+wantBEIR || !strings.HasPrefix(lines[4], "300\t1\t") {
		t.Errorf("scale.tsv:\n%s", tsv)
	}
	md, err := os.ReadFile(filepath.Join(out, "scale.md"))
	must(t, err)
	if string(md) != stdout.String() || !strings.Contains(stdout.String(), "| 300 | 384-dim |") ||
		!strings.Contains(stdout.String(), "| tiny | embedded |") {
		t.Errorf("table:\n%s", stdout.String())
	}
	if _, err := runScaleFlags("--sizes", "10,x"); err == nil || !strings.Contains(err.Error(), "--sizes") {
		t.Errorf("bad --sizes: %v", err)
	}
	if _, err := runScaleFlags("--modes", "fast"); err == nil || !strings.Contains(err.Error(), "--modes") {
		t.Errorf("bad --modes: %v", err)
	}
}

func runScaleFlags(args ...string) (scaleOptions, error) {
	var b bytes.Buffer
	return parseScaleFlags(args, &b)
}

// A row the disk cannot hold is refused before it starts, with what to do, and
// the rows measured before it are in scale.json: a long run keeps what it got.
func TestScaleKeepsRowsWhenALaterRowIsRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var stdout, progress bytes.Buffer
	err := runScale(context.Background(), []string{"--sizes", "150,1000000000000", "--queries", "5", "--batch", "100",
		"--tmp", dir, "--out", out}, &stdout, &progress)
	if err == nil || !strings.Contains(err.Error(), "1000000000000 chunks, keyword") || !strings.Contains(err.Error(), "GiB free") ||
		!strings.Contains(err.Error(), "--tmp") {
		t.Fatalf("err = %v, want the disk check's refusal of the second size", err)
	}
	b, err := os.ReadFile(filepath.Join(out, "scale.json"))
	must(t, err)
	var rep ScaleReport
	must(t, json.Unmarshal(b, &rep))
	if len(rep.Rows) != 2 || rep.Rows[0].Chunks != 150 || !rep.Rows[1].Vectors || rep.Rows[1].PeakRSSMiB <= 0 {
		t.Fatalf("rows kept: %+v", rep.Rows)
	}
	md, err := os.ReadFile(filepath.Join(out, "scale.md"))
	must(t, err)
	if !strings.Contains(string(md), "| 150 | 384-dim |") {
		t.Errorf("scale.md:\n%s", md)
	}
}
