package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/pipeline"
)

// randomVectors embeds every text as a random 384-dimensional vector: the
// cost of a real model is not what BenchmarkIngestEmbedded measures.
type randomVectors struct{}

func (randomVectors) Model() string { return "bench:random384" }
func (randomVectors) Embed(_ context.Context, texts []string, _ rag.EmbedKind) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		v := make([]float32, 384)
		for j := range v {
			v[j] = rand.Float32() - 0.5
		}
		out[i] = v
	}
	return out, nil
}

// smallDoc is a document of about 80 words: one or two chunks of the default
// chunker.
func smallDoc(rng *rand.Rand, i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Document %d\n\n", i)
	for w := range 40 + rng.IntN(80) {
		if w > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", rng.IntN(20000))
	}
	return b.String()
}

// BenchmarkIngestEmbedded measures documents/s through a pipeline into the
// embedded store with fsync on (its default), from its source (a directory of
// small Markdown files: what `helix rag ingest` does) and from rag-ingest steps
// (Ingest with 1,000 documents a call), keyword-only and with 384-dimensional
// vectors.
func BenchmarkIngestEmbedded(b *testing.B) {
	for _, dim := range []int{0, 384} {
		for _, from := range []string{"source", "steps"} {
			b.Run(fmt.Sprintf("dim=%d/%s", dim, from), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				src := b.TempDir()
				texts := make([]string, b.N)
				for i := range texts {
					texts[i] = smallDoc(rng, i)
					if from == "source" {
						if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("d%d.md", i)), []byte(texts[i]), 0o644); err != nil {
							b.Fatal(err)
						}
					}
				}
				cfg := config.PipelineConfig{ID: "bench", Store: config.StoreConfig{Store: "embedded"},
					Retrieve: config.RetrieveConfig{Strategy: "keyword", TopK: 3}, Output: "text"}
				if from == "source" {
					cfg.Source = &config.PipelineSource{Dir: src}
				}
				parts := pipeline.DefaultParts()
				if dim > 0 {
					cfg.Embed = &config.EmbedConfig{Provider: "bench"}
					parts.Embedder = func(context.Context, config.EmbedConfig) (rag.Embedder, error) { return randomVectors{}, nil }
				}
				p, err := pipeline.New(cfg, pipeline.Options{Parts: &parts, DataDir: b.TempDir(), NoBackgroundIngest: true, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				defer p.Stop(context.Background())
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				start := time.Now()
				var res pipeline.Result
				if from == "source" {
					res, err = p.IngestSource(context.Background())
				} else {
					for first := 0; first < b.N && err == nil; first += 1000 {
						docs := make([]rag.Document, 0, 1000)
						for i := first; i < min(first+1000, b.N); i++ {
							docs = append(docs, rag.Document{ID: fmt.Sprintf("d%d", i), Text: texts[i]})
						}
						var r pipeline.Result
						r, err = p.Ingest(context.Background(), docs)
						res.Ingested += r.Ingested
						res.Chunks += r.Chunks
					}
				}
				took := time.Since(start)
				if err != nil || res.Ingested != b.N {
					b.Fatalf("ingested %d of %d: %v", res.Ingested, b.N, err)
				}
				b.ReportMetric(float64(b.N)/took.Seconds(), "docs/s")
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/doc")
				b.ReportMetric(float64(res.Chunks)/float64(b.N), "chunks/doc")
			})
		}
	}
}

// cpuTime is the CPU time the process has used: on a shared machine the
// CPU per document says more than the documents per second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
