package rag_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/pipeline/pipelinetest"
	"github.com/arvenza/helix/internal/rag/store/embedded"
)

// armsStore is a real embedded store holding a few documents whose keyword
// and vector rankings differ, with the word-hashing test embedder.
func armsStore(t *testing.T) (rag.Store, rag.Embedder) {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	emb := &pipelinetest.Embedder{}
	texts := []string{
		"Kafka consumers commit offsets after each batch.",
		"Invoices are emailed on the first day of each month.",
		"Download the tarball and run the installer as root, then reboot.",
		"Offsets of a consumer group live in a compacted topic.",
		"The billing month starts on the first day.",
		"Reboot the server after you install the kernel.",
	}
	ctx := context.Background()
	for i, text := range texts {
		id := fmt.Sprintf("doc%d", i)
		chunks := []rag.Chunk{{ID: id + "#0", DocID: id, Text: text, Title: fmt.Sprintf("Doc %d", i),
			Metadata: map[string]any{"source": id + ".md"}}}
		vecs, err := emb.Embed(ctx, []string{text}, rag.EmbedDocument)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, id, "h"+id, chunks, vecs); err != nil {
			t.Fatal(err)
		}
	}
	return st, emb
}

func hitIDs(hs []rag.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Chunk.ID
	}
	return out
}

// The fused ranking RetrieveArms shows is exactly what a hybrid Retrieve
// returns, ids and scores, for every query and bound; the arms are each
// arm's own ranking as the store gives it.
func TestRetrieveArmsFusedIsRetrieve(t *testing.T) {
	t.Parallel()
	st, emb := armsStore(t)
	ctx := context.Background()
	for _, q := range []rag.Query{
		{Text: "consumer offsets"},
		{Text: "first day of the month", TopK: 2},
		{Text: "reboot after install", TopK: 6, Candidates: 3},
		{Text: "reboot after install", MinScore: 0.02},
		{Text: "offsets", MaxBytes: 120},
		{Text: "nothing matches zzz"},
	} {
		want, err := rag.Retrieve(ctx, st, emb, q)
		if err != nil {
			t.Fatal(err)
		}
		arms, err := rag.RetrieveArms(ctx, st, emb, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if !reflect.DeepEqual(arms.Fused, want) && !(len(arms.Fused) == 0 && len(want) == 0) {
			t.Errorf("%+v: fused %v, Retrieve %v", q, hitIDs(arms.Fused), hitIDs(want))
		}
		n := q.Candidates
		if n == 0 {
			n = rag.DefaultCandidates
		}
		kw, _ := st.SearchKeyword(ctx, q.Text, n, nil)
		if !reflect.DeepEqual(hitIDs(arms.Keyword), hitIDs(kw)) {
			t.Errorf("%+v: keyword arm %v, store %v", q, hitIDs(arms.Keyword), hitIDs(kw))
		}
		vec, _ := emb.Embed(ctx, []string{q.Text}, rag.EmbedQuery)
		vs, _ := st.SearchVector(ctx, vec[0], n, nil)
		if !arms.HasVector || !reflect.DeepEqual(hitIDs(arms.Vector), hitIDs(vs)) {
			t.Errorf("%+v: vector arm %v, store %v", q, hitIDs(arms.Vector), hitIDs(vs))
		}
	}
	// The arms differ for this query, or the test would show nothing.
	arms, _ := rag.RetrieveArms(ctx, st, emb, rag.Query{Text: "consumer offsets"})
	if reflect.DeepEqual(hitIDs(arms.Keyword), hitIDs(arms.Vector)) {
		t.Errorf("keyword and vector arms rank alike: %v", hitIDs(arms.Keyword))
	}
}

// Without an embedder only the keyword arm runs, and nothing is fused.
func TestRetrieveArmsKeywordOnly(t *testing.T) {
	t.Parallel()
	st, _ := armsStore(t)
	arms, err := rag.RetrieveArms(context.Background(), st, nil, rag.Query{Text: "reboot"})
	if err != nil {
		t.Fatal(err)
	}
	if arms.HasVector || arms.Vector != nil || arms.Fused != nil || len(arms.Keyword) != 2 {
		t.Errorf("keyword only: %+v", arms)
	}
}

// The arms take Retrieve's bounds: a top_k above max_top_k is refused.
func TestRetrieveArmsBounds(t *testing.T) {
	t.Parallel()
	st, emb := armsStore(t)
	_, err := rag.RetrieveArms(context.Background(), st, emb, rag.Query{Text: "q", TopK: 11, MaxTopK: 10})
	if err == nil || !strings.Contains(err.Error(), "max_top_k 10") {
		t.Errorf("top_k over max: %v", err)
	}
}
