package pipeline_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/pipeline/pipelinetest"
	"github.com/arvenza/helix/internal/testtools"
)

// countingSource counts 40 documents (an estimate) and holds its walk after the
// first document until release is closed.
type countingSource struct{ release chan struct{} }

func (countingSource) Count(context.Context) (int, error) { return 40, nil }

func (s countingSource) Walk(ctx context.Context, fn func(rag.Document) error) error {
	for i, text := range []string{"one", "two", "three"} {
		if err := fn(rag.Document{ID: text, Text: text + " document"}); err != nil {
			return err
		}
		if i == 0 {
			select {
			case <-s.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// A source that counts gives the progress its total while the ingest runs (for
// an ETA); once the whole source was read the total is what was read.
func TestProgressTotal(t *testing.T) {
	t.Parallel()
	kit := pipelinetest.New()
	parts := kit.Parts()
	src := countingSource{release: make(chan struct{})}
	parts.Source = func(config.PipelineSource, *slog.Logger) (pipeline.Source, error) { return src, nil }
	cfg := config.PipelineConfig{ID: "count", Source: &config.PipelineSource{Dir: "x"}, Store: config.StoreConfig{Store: "embedded"}}
	p, err := pipeline.New(cfg, pipeline.Options{Parts: parts, DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	done := make(chan pipeline.Result)
	go func() {
		res, _ := p.IngestSource(context.Background())
		done <- res
	}()
	testtools.Eventually(t, "the counted total in the progress", func() bool {
		pr := p.Progress()
		return pr.Running && pr.Total == 40 && pr.Seen == 1
	})
	close(src.release)
	res := <-done
	if pr := p.Progress(); !pr.Done || pr.Total != 3 || res.Seen != 3 || res.Ingested != 3 {
		t.Errorf("after the ingest: %+v, result %+v", pr, res)
	}
}
