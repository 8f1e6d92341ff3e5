package pipeline_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag/pipeline"
	"github.com/arvenza/helix/internal/rag/pipeline/pipelinetest"
)

// A pipeline's arms fuse into what its own hybrid query returns, with its
// rag-retrieve settings; without an embedder only the keyword arm runs;
// looking at the arms is not counted as a query.
func TestPipelineArms(t *testing.T) {
	t.Parallel()
	for _, embed := range []bool{true, false} {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{
			"install.md": "# Install\n\nRun the installer as root, then reboot.\n",
			"kafka.md":   "# Kafka\n\nConsumers commit offsets after each batch.\n",
			"billing.md": "# Billing\n\nInvoices go out on the first day of the month.\n",
		})
		p := newPipelineIn(t, pipelinetest.New(), dir, t.TempDir(), embed)
		startAndWait(t, p)
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		ctx := context.Background()
		want, err := p.Query(ctx, pipeline.Query{Text: "reboot after install"})
		if err != nil {
			t.Fatal(err)
		}
		before := p.Stats().Queries
		arms, err := p.Arms(ctx, "reboot after install", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Stats().Queries != before {
			t.Error("looking at the arms counted as a query")
		}
		if len(arms.Keyword) == 0 {
			t.Errorf("embed %v: no keyword arm", embed)
		}
		if embed && (!arms.HasVector || !reflect.DeepEqual(arms.Fused, want)) {
			t.Errorf("fused %+v, query %+v", arms.Fused, want)
		}
		if !embed && (arms.HasVector || arms.Fused != nil) {
			t.Errorf("keyword only: %+v", arms)
		}
		if st, err := p.StoreStats(ctx); err != nil || st.Documents != 3 {
			t.Errorf("store stats %+v %v", st, err)
		}
		if _, err := p.Arms(ctx, "  ", 0, nil); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("empty query: %v", err)
		}
		if _, err := p.Arms(ctx, "x", 1_000, nil); err == nil || !strings.Contains(err.Error(), "max_top_k") {
			t.Errorf("k over max_top_k: %v", err)
		}
	}
}
