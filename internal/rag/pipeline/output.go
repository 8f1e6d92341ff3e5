package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/arvenza/helix/internal/rag"
)

// Result shapes of a query.
const (
	OutputText = "text"
	OutputJSON = "json"
)

// JSONResult is one hit of a query's json output.
type JSONResult struct {
	Rank     int            `json:"rank"`
	Score    float64        `json:"score"`
	Text     string         `json:"text"`
	Source   string         `json:"source,omitempty"`
	DocID    string         `json:"doc_id"`
	ChunkID  string         `json:"chunk_id"`
	Headings []string       `json:"headings"`
	Metadata map[string]any `json:"metadata"`
}

// JSONOutput is a query's json output.
type JSONOutput struct {
	Query   string       `json:"query"`
	Results []JSONResult `json:"results"`
}

// ToJSON describes hits as the json output does.
func ToJSON(query string, hits []rag.Hit) JSONOutput {
	out := JSONOutput{Query: query, Results: make([]JSONResult, 0, len(hits))}
	for i, h := range hits {
		c := h.Chunk
		md := c.Metadata
		if md == nil {
			md = map[string]any{}
		}
		headings := c.Headings
		if headings == nil {
			headings = []string{}
		}
		out.Results = append(out.Results, JSONResult{Rank: i + 1, Score: h.Score, Text: c.Text, Source: citation(c),
			DocID: c.DocID, ChunkID: c.ID, Headings: headings, Metadata: md})
	}
	return out
}

// Text formats hits as numbered sources an answer can cite:
//
//	[1] docs/install.md (Install > Linux)
//	chunk text
//
//	[2] …
func Text(query string, hits []rag.Hit) string {
	if len(hits) == 0 {
		return fmt.Sprintf("No documents match %q.", query)
	}
	var b strings.Builder
	for i, h := range hits {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%d] %s", i+1, citation(h.Chunk))
		if len(h.Chunk.Headings) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(h.Chunk.Headings, " > "))
		}
		b.WriteString("\n")
		b.WriteString(strings.TrimSpace(h.Chunk.Text))
	}
	b.WriteString("\n")
	return b.String()
}

// Format renders hits in output (text or json) and returns the body and its
// content type.
func Format(output, query string, hits []rag.Hit) ([]byte, string, error) {
	if output == OutputJSON {
		b, err := json.Marshal(ToJSON(query, hits))
		return b, "application/json", err
	}
	return []byte(Text(query, hits)), "text/plain; charset=utf-8", nil
}

// citation is what a citation names: the chunk's source, else its document id.
func citation(c rag.Chunk) string {
	if s, ok := c.Metadata["source"].(string); ok && s != "" {
		return s
	}
	return strings.TrimPrefix(c.DocID, FilePrefix)
}
