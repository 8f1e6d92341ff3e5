package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// summarize prints the results in files as one Markdown table, in the order given.
func summarize(files []string, out io.Writer) error {
	if len(files) == 0 {
		return errors.New("summarize: name the result files (rag --out FILE)")
	}
	fmt.Fprintln(out, "| dataset | configuration | nDCG@10 | recall@100 | ingest docs/s | embedder docs/s | query p50 | query p99 | peak RSS |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r Result
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		embed := "–"
		if r.Ingest.EmbedDocsPerSec > 0 {
			embed = fmt.Sprintf("%.0f", r.Ingest.EmbedDocsPerSec)
		}
		fmt.Fprintf(out, "| %s | %s | %.4f | %.4f | %.0f | %s | %.2f ms | %.2f ms | %.0f MiB |\n",
			r.Dataset, describe(r), r.Quality.NDCG10, r.Quality.Recall100, r.Ingest.DocsPerSec, embed,
			r.Query.P50Ms, r.Query.P99Ms, r.PeakRSSMiB)
	}
	return nil
}

// describe names a result's configuration in a few words.
func describe(r Result) string {
	if r.Label != "" {
		return r.Label
	}
	s := r.Setup
	var parts []string
	if s.Pipeline != "" {
		parts = append(parts, "pipeline "+s.Pipeline)
	}
	parts = append(parts, s.Strategy, s.Store)
	if s.Multifield {
		parts = append(parts, "title+text as 2 fields in 2 stores (BEIR's query)")
	} else {
		parts = append(parts, "chunk "+s.Chunk)
	}
	if s.Flat {
		parts = append(parts, "flat (title in the text)")
	}
	if s.K1 != 0 || s.B != 0 {
		parts = append(parts, fmt.Sprintf("k1 %g b %g", s.K1, s.B))
	}
	if s.Embedder != "" {
		parts = append(parts, s.Embedder)
	}
	return strings.Join(parts, ", ")
}
