package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// writeTinyBEIR writes a four-document collection whose three test queries each
// have one obviously best document (by title or by text), gzip-compressed as
// the shared data is.
func writeTinyBEIR(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	docs := []BEIRDoc{
		{ID: "d1", Title: "Coffee and sleep", Text: "Caffeine delays the onset of sleep in adults."},
		{ID: "d2", Title: "Tea", Text: "Green tea contains catechins and some caffeine."},
		{ID: "d3", Title: "Running injuries", Text: "Marathon runners often injure their knees."},
		{ID: "d4", Title: "Vitamin D", Text: "Sunlight lets the skin make vitamin D."},
	}
	var corpus bytes.Buffer
	gz := gzip.NewWriter(&corpus)
	enc := json.NewEncoder(gz)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	queries := `{"_id": "q1", "text": "Does caffeine delay sleep?"}
{"_id": "q2", "text": "knee injuries of marathon runners"}
{"_id": "q3", "text": "vitamin D from sunlight"}
{"_id": "q4", "text": "a training query that is not in the test split"}
`
	qrels := "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq2\td3\t1\nq3\td4\t1\n"
	must(t, os.WriteFile(filepath.Join(dir, "corpus.jsonl.gz"), corpus.Bytes(), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(queries), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "qrels"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte(qrels), 0o644))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoadDataset(t *testing.T) {
	ds, err := LoadDataset(writeTinyBEIR(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Docs) != 4 || len(ds.Queries) != 3 || ds.Qrels["q1"]["d1"] != 2 || ds.Queries[0].ID != "q1" {
		t.Fatalf("dataset = %d docs, queries %+v, qrels %v", len(ds.Docs), ds.Queries, ds.Qrels)
	}
	if got := DocText(ds.Docs[0]); got != "Coffee and sleep\n\nCaffeine delays the onset of sleep in adults." {
		t.Errorf("DocText = %q", got)
	}
}

func TestLoadDatasetErrors(t *testing.T) {
	dir := writeTinyBEIR(t)
	must(t, os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte("query-id\tcorpus-id\tscore\nq1\td1\n"), 0o644))
	_, err := LoadDataset(dir, "test")
	if err == nil || !strings.Contains(err.Error(), "test.tsv:2:") {
		t.Errorf("short qrels line: err = %v, want the file and line", err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), []byte("q9\td1\t1\n"), 0o644))
	if _, err := LoadDataset(dir, "test"); err == nil || !strings.Contains(err.Error(), `"q9"`) {
		t.Errorf("unknown query: err = %v", err)
	}
	if _, err := LoadDataset(t.TempDir(), "test"); err == nil {
		t.Error("an empty directory loaded")
	}
}

func TestRunKeyword(t *testing.T) {
	for _, chunk := range []string{"none", "recursive:512:64", "fixed:8:2"} {
		t.Run(chunk, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			var stdout bytes.Buffer
			args := []string{"--data", writeTinyBEIR(t), "--chunk", chunk, "--nosync", "--k1", "1.2", "--b", "0.75", "--out", out}
			if err := run(context.Background(), args, &stdout); err != nil {
				t.Fatal(err)
			}
			var res Result
			data, err := os.ReadFile(out)
			must(t, err)
			must(t, json.Unmarshal(data, &res))
			if res.Counts.Documents != 4 || res.Counts.Queries != 3 || res.Setup.K1 != 1.2 || res.Setup.B != 0.75 {
				t.Errorf("result = %+v", res)
			}
			// Every query finds its best document first; q1's grade-1 document
			// (d2, sharing only "caffeine") comes second.
			if res.Quality.NDCG10 != 1 || res.Quality.Recall100 != 1 {
				t.Errorf("nDCG@10 = %v, recall@100 = %v, want 1 and 1", res.Quality.NDCG10, res.Quality.Recall100)
			}
			if res.Ingest.DocsPerSec <= 0 || res.Query.P99Ms < res.Query.P50Ms || res.PeakRSSMiB <= 0 {
				t.Errorf("ingest %+v, query %+v, rss %v", res.Ingest, res.Query, res.PeakRSSMiB)
			}
			if !bytes.Equal(stdout.Bytes(), data) {
				t.Error("the printed result differs from the file")
			}
		})
	}
}

func TestRunFlagErrors(t *testing.T) {
	data := writeTinyBEIR(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--data is required"},
		{[]string{"--data", data, "--strategy", "vector"}, "needs an embedder"},
		{[]string{"--data", data, "--strategy", "fuzzy"}, "want keyword, vector or hybrid"},
		{[]string{"--data", data, "--chunk", "recursive:x"}, "not a positive number"},
		{[]string{"--data", data, "--store", "sqlite"}, "want embedded or pgvector"},
		{[]string{"--data", data, "--config", "x.yaml"}, "go together"},
		{[]string{"--data", data, "--embed", "onnx"}, "--onnx-model"},
		{[]string{"--data", data, "--flat", "--multifield"}, "exclude each other"},
	} {
		err := run(context.Background(), c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
	}
}

func TestRunPipelineFromConfig(t *testing.T) {
	yaml := filepath.Join(t.TempDir(), "helix.yaml")
	must(t, os.WriteFile(yaml, []byte(`
pipelines:
  - id: kb
    steps:
      - rag-chunk: {strategy: recursive, size: 256}
      - rag-store: {store: embedded}
      - rag-retrieve: {strategy: keyword, top_k: 3}
`), 0o644))
	data := writeTinyBEIR(t)
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"--data", data, "--config", yaml, "--pipeline", "kb"}, &stdout); err != nil {
		t.Fatal(err)
	}
	var res Result
	must(t, json.Unmarshal(stdout.Bytes(), &res))
	if res.Setup.Pipeline != "kb" || res.Setup.Strategy != "keyword" || res.Counts.Chunks != 4 || res.Quality.NDCG10 != 1 {
		t.Errorf("result = %+v", res)
	}
	err := run(context.Background(), []string{"--data", data, "--config", yaml, "--pipeline", "nope"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "it has: kb") {
		t.Errorf("unknown pipeline: err = %v", err)
	}
}

// TestPipelineGetsTitles: in --config mode the pipeline ingests a BEIR title as
// the document's title (every chunk carries it, the store scores it as its own
// field), not as part of the text; --flat puts it back in the text.
func TestPipelineGetsTitles(t *testing.T) {
	yaml := filepath.Join(t.TempDir(), "helix.yaml")
	must(t, os.WriteFile(yaml, []byte("pipelines:\n  - id: kb\n    steps:\n      - rag-retrieve: {strategy: keyword}\n"), 0o644))
	ds, err := LoadDataset(writeTinyBEIR(t), "test")
	must(t, err)
	tmp := t.TempDir()
	o, err := parseFlags([]string{"--data", tmp, "--config", yaml, "--pipeline", "kb"}, &bytes.Buffer{})
	must(t, err)
	sys, _, err := openPipeline(context.Background(), o, tmp, &Setup{})
	must(t, err)
	defer sys.close()
	for _, flat := range []bool{false, true} {
		docs := make([]rag.Document, len(ds.Docs))
		for i, d := range ds.Docs {
			docs[i] = Document(d, ds.Name, flat)
		}
		must(t, sys.ingest(context.Background(), docs))
		hits, err := sys.retrieve(context.Background(), "running", 10)
		must(t, err)
		if len(hits) != 1 || hits[0].Chunk.DocID != "d3" {
			t.Fatalf("flat=%v: running: %+v", flat, hits)
		}
		c := hits[0].Chunk
		if flat && (c.Title != "" || c.Text != DocText(ds.Docs[2])) {
			t.Errorf("flat: chunk %+v, want no title and the title in the text", c)
		}
		if !flat && (c.Title != "Running injuries" || c.Metadata["title"] != "Running injuries" || c.Text != ds.Docs[2].Text) {
			t.Errorf("chunk %+v, want the title apart from the text", c)
		}
	}
}

func TestRunFlat(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"--data", writeTinyBEIR(t), "--flat", "--nosync"}, &stdout); err != nil {
		t.Fatal(err)
	}
	var res Result
	must(t, json.Unmarshal(stdout.Bytes(), &res))
	if !res.Setup.Flat || res.Quality.NDCG10 != 1 {
		t.Errorf("result = %+v", res)
	}
}

func TestRunMultifield(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"--data", writeTinyBEIR(t), "--multifield", "--nosync"}, &stdout); err != nil {
		t.Fatal(err)
	}
	var res Result
	must(t, json.Unmarshal(stdout.Bytes(), &res))
	// Two fields of four documents each; d1 wins q1 on both fields.
	if !res.Setup.Multifield || res.Counts.Chunks != 8 || res.Quality.NDCG10 != 1 {
		t.Errorf("result = %+v", res)
	}
	err := run(context.Background(), []string{"--data", writeTinyBEIR(t), "--multifield", "--chunk", "recursive"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--chunk none") {
		t.Errorf("multifield with chunking: err = %v", err)
	}
}

func TestSummarize(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	must(t, run(context.Background(), []string{"--data", writeTinyBEIR(t), "--nosync", "--out", out}, &bytes.Buffer{}))
	var table bytes.Buffer
	must(t, run(context.Background(), []string{"summarize", out}, &table))
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "| 1.0000 | 1.0000 |") || !strings.Contains(lines[2], "keyword, embedded, chunk none, k1 1.2 b 0.75") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := run(context.Background(), []string{"summarize"}, &bytes.Buffer{}); err == nil {
		t.Error("summarize of nothing succeeded")
	}
}
