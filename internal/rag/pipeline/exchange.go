package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/pkg/exchange"
)

// InputSchema is what a pipeline takes as an MCP tool and as pipeline://id.
var InputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What to search the documents for"},` +
	`"top_k":{"type":"integer","minimum":1,"description":"How many passages to return"},` +
	`"filter":{"type":"object","description":` + filterDescription + `}},` +
	`"required":["query"]}`)

// filterDescription tells a model how to write a filter (a JSON string).
const filterDescription = `"Only passages whose metadata matches, Mongo-style: {\"field\": value} is equality (a list-valued field matches when any element does); ` +
	`{\"field\": {\"$op\": value}} with $eq, $ne, $gt, $gte, $lt, $lte (numbers, or strings such as ISO dates \"2024-01-31\"), $in and $nin (a list), $exists (true or false); ` +
	`{\"$and\": [filters]}, {\"$or\": [filters]}, {\"$not\": filter}; dotted names reach into objects (\"author.name\"). ` +
	`Example: {\"lang\": \"en\", \"year\": {\"$gte\": 2023}, \"tags\": {\"$in\": [\"billing\", \"refunds\"]}}"`

// HeaderHits is the header a query writes: how many passages it found.
const HeaderHits = "HelixRagHits"

// Process is the processor of the pipeline's workflow: the body is the query
// (text, or {query, top_k, filter}); the results, in the pipeline's output, become
// the body.
func (p *Pipeline) Process(ctx context.Context, ex *exchange.Exchange) error {
	q, err := QueryFromBody(ex.In().Body())
	if err != nil {
		return fmt.Errorf("pipeline %s: %w", p.cfg.ID, err)
	}
	return p.Answer(ctx, ex, q, p.cfg.Output)
}

// Answer runs q and writes its results on ex in output (text or json): text as a
// string, json as a JSON object value, with a Content-Type.
func (p *Pipeline) Answer(ctx context.Context, ex *exchange.Exchange, q Query, output string) error {
	if q.Exchange == nil {
		q.Exchange = ex
	}
	hits, err := p.Query(ctx, q)
	if err != nil {
		return fmt.Errorf("pipeline %s: %w", p.cfg.ID, err)
	}
	msg := ex.In()
	msg.SetHeader(HeaderHits, len(hits))
	if output == OutputJSON {
		b, err := json.Marshal(ToJSON(q.Text, hits))
		if err != nil {
			return err
		}
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		msg.SetBody(v)
		msg.SetHeader(exchange.HeaderContentType, "application/json")
		return nil
	}
	msg.SetBody(Text(q.Text, hits))
	msg.SetHeader(exchange.HeaderContentType, "text/plain; charset=utf-8")
	return nil
}

// QueryFromBody reads a query from a body: a JSON object {query, top_k, filter}
// (a map, or JSON text), else the body as text.
func QueryFromBody(body any) (Query, error) {
	obj, text := objectOrText(body)
	if obj == nil {
		if strings.TrimSpace(text) == "" {
			return Query{}, errors.New(`the query is empty: send {"query": "…"} or text`)
		}
		return Query{Text: text}, nil
	}
	var q Query
	switch v := obj["query"].(type) {
	case string:
		q.Text = v
	case nil:
		return Query{}, errors.New(`the body has no "query": send {"query": "…", "top_k": 5}`)
	default:
		return Query{}, fmt.Errorf("query must be a string, not %s", exchange.Stringify(v))
	}
	if v, ok := obj["top_k"]; ok && v != nil {
		n, ok := wholeNumber(v)
		if !ok || n < 1 {
			return Query{}, fmt.Errorf("top_k must be a positive integer, not %s", exchange.Stringify(v))
		}
		q.TopK = n
	}
	if v, ok := obj["filter"]; ok && v != nil {
		f, ok := v.(map[string]any)
		if !ok {
			return Query{}, errors.New(`filter must be an object of metadata values or operators, such as {"lang": "en", "year": {"$gte": 2020}}`)
		}
		if _, err := rag.Filter(f).Parse(); err != nil {
			return Query{}, err
		}
		q.Filter = rag.Filter(f)
	}
	return q, nil
}

func wholeNumber(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == math.Trunc(n) && n < math.MaxInt32 {
			return int(n), true
		}
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// objectOrText returns the body as a JSON object, or else as text.
func objectOrText(body any) (map[string]any, string) {
	switch b := body.(type) {
	case nil:
		return nil, ""
	case map[string]any:
		return b, ""
	case string:
		return jsonObject([]byte(b)), b
	case []byte:
		return jsonObject(b), string(b)
	case json.RawMessage:
		return jsonObject(b), string(b)
	}
	s := exchange.Stringify(body)
	return jsonObject([]byte(s)), s
}

func jsonObject(b []byte) map[string]any {
	t := strings.TrimSpace(string(b))
	if !strings.HasPrefix(t, "{") {
		return nil
	}
	var m map[string]any
	if json.Unmarshal([]byte(t), &m) != nil {
		return nil
	}
	return m
}
