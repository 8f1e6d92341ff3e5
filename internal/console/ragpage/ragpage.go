// Package ragpage is the console's RAG page: the application's pipelines
// (store, documents and chunks, embedder, ingest and query counters) and a
// query playground that runs a pipeline's retrieval for a query and shows the
// keyword arm's ranking, the vector arm's ranking and their fusion side by
// side, so that a person sees why a passage ranks where it does.
//
// The playground only reads: it is a GET form, bounded in query length, in
// passages per arm and in time, and it does not count as a query in the
// pipeline's metrics.
package ragpage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/redact"
)

// Bounds of the playground.
const (
	// MaxQueryBytes is the longest query the playground runs.
	MaxQueryBytes = 1000
	// MaxFilterBytes is the longest metadata filter (JSON) it takes.
	MaxFilterBytes = 4000
	// MaxK is the most passages shown per ranking.
	MaxK = 50
	// DefaultK is the passages per ranking when the form does not say.
	DefaultK = 10
	// QueryTimeout bounds one playground query (the embedder may be remote).
	QueryTimeout = 10 * time.Second
	// SnippetRunes bounds the text shown of a passage.
	SnippetRunes = 280
	// countTimeout bounds asking a store what it holds (pgvector is remote).
	countTimeout = 2 * time.Second
	// PageSize is the pipelines listed per page.
	PageSize = 50
)

// Pipeline is what the page shows of one pipeline; never a key or a DSN.
type Pipeline struct {
	ID          string
	Description string
	// Store is the store's kind (embedded, pgvector).
	Store string
	// Embedder is provider and model ("openai text-embedding-3-small"); ""
	// when the pipeline has none (keyword retrieval only).
	Embedder string
	// Strategy is what the pipeline's rag-retrieve answers with.
	Strategy string
	// Documents and Chunks are what the store holds; StatsError says why they
	// are unknown (the store is not open, or failed).
	Documents, Chunks int
	StatsError        string
	// Counters, as /metrics has them.
	Ingested, IngestErrors, Queries, QueryErrors uint64
}

// Source is what the page reads the application through (pkg/app implements
// it).
type Source interface {
	// Pipelines lists the pipelines in declaration order, without Documents,
	// Chunks and StatsError (Count fills them for the pipelines a page shows).
	Pipelines(ctx context.Context) []Pipeline
	// Count asks pipeline id's store what it holds.
	Count(ctx context.Context, id string) (rag.Stats, error)
	// Arms runs pipeline id's retrieval for query taken apart into its arms,
	// k passages per ranking, with metadata filter f (nil: none; the
	// pipeline's own filter applies besides). ok is false when there is no
	// such pipeline.
	Arms(ctx context.Context, id, query string, k int, f rag.Filter) (arms rag.Arms, ok bool, err error)
}

// New returns the page.
func New(src Source) console.Page {
	h := &handler{src: src}
	return console.Page{Path: "/rag", Title: "RAG", Order: 60, Nav: true, Mount: func(m *console.Mux) {
		h.m = m
		m.Get("/rag", h.list)
		m.Get("/rag/{pipeline}", h.playground)
	}}
}

type handler struct {
	src Source
	m   *console.Mux
}

type listData struct {
	Pipelines []pipelineRow
	Shown     int
	Total     int
	Prev      string
	Next      string
}

type pipelineRow struct {
	Pipeline
	URL string
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	all := h.src.Pipelines(r.Context())
	page := 0
	if s := r.URL.Query().Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > len(all)/PageSize {
			writeStatus(w, http.StatusBadRequest)
			h.m.Render(w, r, console.View{Title: "RAG", Active: "/rag", Body: errorTmpl,
				Data: errorData{Status: http.StatusBadRequest, Message: fmt.Sprintf("page %q: use a page number from 0 to %d", console.Clip(s, 40), len(all)/PageSize), Back: h.m.URL("/rag")}})
			return
		}
		page = n
	}
	from := min(page*PageSize, len(all))
	to := min(from+PageSize, len(all))
	d := listData{Total: len(all), Shown: to - from}
	for _, p := range all[from:to] {
		h.count(r.Context(), &p)
		d.Pipelines = append(d.Pipelines, pipelineRow{Pipeline: p, URL: h.m.URL("/rag/" + url.PathEscape(p.ID))})
	}
	if page > 0 {
		d.Prev = h.m.URL("/rag", url.Values{"page": {strconv.Itoa(page - 1)}})
	}
	if to < len(all) {
		d.Next = h.m.URL("/rag", url.Values{"page": {strconv.Itoa(page + 1)}})
	}
	h.m.Render(w, r, console.View{Title: "RAG", Active: "/rag", Body: listTmpl, Data: d})
}

// ranked is one passage of one ranking, with its ranks in the others (0: not
// in that ranking's candidates).
type ranked struct {
	Rank                           int
	Score                          string
	Source, Title, Heading, Text   string
	Cut                            bool
	KeywordRank, VectorRank, Fused int
	ID                             string
}

type column struct {
	Name, Caption string
	// Other names the rankings whose ranks each row shows.
	Hits  []ranked
	Shown int
	Of    int
	Kind  string // keyword, vector, fused
}

type playData struct {
	Pipeline   Pipeline
	Query      string
	K          int
	MaxK       int
	MaxQuery   int
	Filter     string // the metadata filter as typed (JSON)
	MaxFilter  int
	Ran        bool
	Error      string
	Columns    []column
	HasVector  bool
	List       string
	Took       time.Duration
	Answers    string
	NoEmbedder bool
}

func (h *handler) playground(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("pipeline")
	var p Pipeline
	found := false
	for _, x := range h.src.Pipelines(r.Context()) {
		if x.ID == id {
			p, found = x, true
			break
		}
	}
	if !found {
		writeStatus(w, http.StatusNotFound)
		h.m.Render(w, r, console.View{Title: "RAG", Active: "/rag", Body: errorTmpl,
			Data: errorData{Status: http.StatusNotFound, Message: fmt.Sprintf("no pipeline %q in this application: pick one from the list", console.Clip(id, 80)), Back: h.m.URL("/rag")}})
		return
	}
	h.count(r.Context(), &p)
	q := r.URL.Query()
	d := playData{Pipeline: p, K: DefaultK, MaxK: MaxK, MaxQuery: MaxQueryBytes, List: h.m.URL("/rag"), Answers: p.Strategy, NoEmbedder: p.Embedder == ""}
	status := http.StatusOK
	fail := func(code int, msg string) {
		status, d.Error = code, msg
	}
	text := q.Get("q")
	d.Query = text
	d.Filter, d.MaxFilter = q.Get("filter"), MaxFilterBytes
	f, ferr := parseFilter(d.Filter)
	if ferr != "" {
		d.Filter = console.Clip(strings.ToValidUTF8(d.Filter, "\uFFFD"), MaxFilterBytes)
		fail(http.StatusBadRequest, ferr)
	}
	if s := q.Get("k"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxK {
			fail(http.StatusBadRequest, fmt.Sprintf("k %q: show from 1 to %d passages per ranking", console.Clip(s, 40), MaxK))
		} else {
			d.K = n
		}
	}
	switch {
	case d.Error != "":
	case len(text) > MaxQueryBytes:
		d.Query = console.Clip(text, MaxQueryBytes)
		fail(http.StatusBadRequest, fmt.Sprintf("the query is %d bytes: the playground runs queries of at most %d bytes; shorten it", len(text), MaxQueryBytes))
	case !utf8.ValidString(text):
		d.Query = strings.ToValidUTF8(text, "\uFFFD")
		fail(http.StatusBadRequest, "the query is not valid UTF-8 text")
	case strings.TrimSpace(text) != "":
		ctx, cancel := context.WithTimeout(r.Context(), QueryTimeout)
		began := time.Now()
		arms, _, err := h.src.Arms(ctx, p.ID, text, d.K, f)
		cancel()
		d.Took = time.Since(began)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			fail(http.StatusGatewayTimeout, fmt.Sprintf("the query took longer than %v (the embedder or the store is slow): try again, or check the pipeline's logs", QueryTimeout))
		case err != nil:
			fail(http.StatusBadGateway, "the query failed: "+redact.Text(err.Error()))
		default:
			d.Ran, d.HasVector = true, arms.HasVector
			d.Columns = columns(arms, d.K)
		}
	}
	if status != http.StatusOK {
		writeStatus(w, status)
	}
	h.m.Render(w, r, console.View{Title: "RAG · " + p.ID, Active: "/rag", Body: playTmpl, Data: d})
}

// columns lays out the rankings: keyword, vector (when there is a vector
// arm) and fused, each its first k passages, each passage with its ranks in
// the other rankings.
func columns(a rag.Arms, k int) []column {
	kwRank, vecRank, fusedRank := ranks(a.Keyword), ranks(a.Vector), ranks(a.Fused)
	mk := func(name, kind, caption string, hits []rag.Hit) column {
		c := column{Name: name, Kind: kind, Caption: caption, Of: len(hits)}
		for i, h := range hits[:min(k, len(hits))] {
			c.Hits = append(c.Hits, row(i+1, h, kwRank, vecRank, fusedRank))
		}
		c.Shown = len(c.Hits)
		return c
	}
	cols := []column{mk("Keyword (BM25)", "keyword", "The keyword arm: passages sharing the query's words, by BM25 score.", a.Keyword)}
	if a.HasVector {
		cols = append(cols,
			mk("Vector", "vector", "The vector arm: passages nearest the query's embedding, by cosine similarity.", a.Vector),
			mk("Fused", "fused", fmt.Sprintf("Reciprocal rank fusion: each arm adds 1/(%d + rank); what the pipeline's hybrid retrieval returns.", rag.RRFK), a.Fused))
	}
	return cols
}

func ranks(hits []rag.Hit) map[string]int {
	m := make(map[string]int, len(hits))
	for i, h := range hits {
		if _, dup := m[h.Chunk.ID]; !dup {
			m[h.Chunk.ID] = i + 1
		}
	}
	return m
}

func row(rank int, h rag.Hit, kw, vec, fused map[string]int) ranked {
	c := h.Chunk
	src, _ := c.Metadata["source"].(string)
	if src == "" {
		src = c.DocID
	}
	text, cut := snippet(c.Text, SnippetRunes)
	return ranked{Rank: rank, Score: strconv.FormatFloat(h.Score, 'f', 4, 64), Source: console.Clip(src, 200), Title: console.Clip(c.Title, 200),
		Heading: console.Clip(strings.Join(c.Headings, " › "), 200), Text: text, Cut: cut, ID: console.Clip(c.ID, 200),
		KeywordRank: kw[c.ID], VectorRank: vec[c.ID], Fused: fused[c.ID]}
}

// snippet is the first n characters of s, on one line.
func snippet(s string, n int) (string, bool) {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	r := []rune(s)
	return string(r[:n]), true
}

type errorData struct {
	Status  int
	Message string
	Back    string
}

// writeStatus sends a page's status before Render writes it.
func writeStatus(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
}

// count fills p's documents and chunks from its store, in bounded time.
func (h *handler) count(ctx context.Context, p *Pipeline) {
	ctx, cancel := context.WithTimeout(ctx, countTimeout)
	defer cancel()
	st, err := h.src.Count(ctx, p.ID)
	if err != nil {
		p.StatsError = console.Clip(redact.Text(err.Error()), 200)
		return
	}
	p.Documents, p.Chunks = st.Documents, st.Chunks
}

// parseFilter reads the playground's filter field: empty, or a JSON object
// checked as a tool's filter argument is. The message says what is wrong.
func parseFilter(s string) (rag.Filter, string) {
	if strings.TrimSpace(s) == "" {
		return nil, ""
	}
	if len(s) > MaxFilterBytes {
		return nil, fmt.Sprintf("the filter is %d bytes: the playground takes filters of at most %d bytes", len(s), MaxFilterBytes)
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return nil, `the filter is not JSON: write an object such as {"lang": "en", "year": {"$gte": 2023}}`
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, `the filter must be a JSON object, such as {"lang": "en", "year": {"$gte": 2023}}`
	}
	f := rag.Filter(m)
	if _, err := f.Parse(); err != nil {
		return nil, "the filter cannot be used: " + err.Error()
	}
	return f, ""
}
