package ragstep

import (
	"strings"
	"testing"
)

func TestResultsFromBody(t *testing.T) {
	t.Parallel()
	q, hits, err := resultsFromBody(map[string]any{"query": "printer", "results": []any{
		map[string]any{"rank": 1, "score": 0.5, "text": "printer jam", "doc_id": "a", "chunk_id": "a#0", "metadata": map[string]any{"title": "Jams"}},
		map[string]any{"rank": 2, "score": 0.25, "text": "toner", "source": "b.md", "doc_id": "b", "chunk_id": "b#0"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if q != "printer" || len(hits) != 2 || hits[0].Chunk.Title != "Jams" || hits[0].Score != 0.5 || hits[1].Chunk.Metadata["source"] != "b.md" {
		t.Errorf("%q %+v", q, hits)
	}
	for name, body := range map[string]any{
		"text":             "printer",
		"results a string": `{"query": "q", "results": "x"}`,
		"no results":       map[string]any{"query": "q"},
		"empty result":     `{"query": "q", "results": [{}]}`,
		"deep":             strings.Repeat("[", 100000),
	} {
		if _, _, err := resultsFromBody(body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
