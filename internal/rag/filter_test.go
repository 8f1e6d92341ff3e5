package rag

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func parseJSONFilter(t testing.TB, s string) Filter {
	t.Helper()
	var f Filter
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return f
}

func TestFilterOperators(t *testing.T) {
	md := map[string]any{
		"lang":   "en",
		"year":   int64(2024),
		"score":  0.5,
		"draft":  false,
		"date":   "2024-05-01",
		"tag":    []any{"billing", "refunds"},
		"author": map[string]any{"name": "Ada", "team": map[string]any{"id": 7}},
		"a.b":    "literal key with a dot",
	}
	for _, tc := range []struct {
		filter string
		want   bool
	}{
		{`{}`, true},
		{`{"lang": "en"}`, true},
		{`{"lang": "de"}`, false},
		{`{"year": 2024}`, true},
		{`{"year": 2024.0}`, true},
		{`{"year": "2024"}`, false}, // a string never equals a number
		{`{"draft": false}`, true},
		{`{"draft": "false"}`, false},
		{`{"missing": "x"}`, false},
		{`{"lang": "en", "year": 2023}`, false},
		{`{"lang": {"$eq": "en"}}`, true},
		{`{"lang": {"$ne": "en"}}`, false},
		{`{"missing": {"$ne": "x"}}`, true},
		{`{"year": {"$gte": 2020, "$lt": 2025}}`, true},
		{`{"year": {"$gt": 2024}}`, false},
		{`{"year": {"$lte": 2024}}`, true},
		{`{"year": {"$gt": "2000"}}`, false}, // a number and a string do not compare
		{`{"date": {"$gte": "2024-01-01", "$lt": "2024-06-01"}}`, true},
		{`{"date": {"$lt": "2024-05-01"}}`, false},
		{`{"score": {"$in": [0.25, 0.5]}}`, true},
		{`{"lang": {"$in": ["de", "fr"]}}`, false},
		{`{"lang": {"$nin": ["de", "fr"]}}`, true},
		{`{"missing": {"$nin": ["x"]}}`, true},
		{`{"tag": "refunds"}`, true},
		{`{"tag": "shipping"}`, false},
		{`{"tag": {"$in": ["shipping", "billing"]}}`, true},
		{`{"tag": {"$ne": "billing"}}`, false},
		{`{"tag": {"$nin": ["shipping"]}}`, true},
		{`{"lang": {"$exists": true}}`, true},
		{`{"missing": {"$exists": false}}`, true},
		{`{"missing": {"$exists": true}}`, false},
		{`{"author.name": "Ada"}`, true},
		{`{"author.team.id": {"$gte": 7}}`, true},
		{`{"author.team.id.deeper": 7}`, false},
		{`{"a.b": "literal key with a dot"}`, true},
		{`{"$or": [{"lang": "de"}, {"year": 2024}]}`, true},
		{`{"$or": [{"lang": "de"}, {"year": 2023}]}`, false},
		{`{"$and": [{"lang": "en"}, {"tag": "billing"}]}`, true},
		{`{"$not": {"lang": "en"}}`, false},
		{`{"$not": {"$or": [{"lang": "de"}, {"draft": true}]}}`, true},
		{`{"$and": [{"lang": "en"}], "year": 2024}`, true},
	} {
		f := parseJSONFilter(t, tc.filter)
		e, err := f.Parse()
		if err != nil {
			t.Errorf("%s: %v", tc.filter, err)
			continue
		}
		if got := e.Matches(md); got != tc.want {
			t.Errorf("%s matches %v, want %v", tc.filter, got, tc.want)
		}
		if got := f.Matches(md); got != tc.want {
			t.Errorf("Filter.Matches(%s) = %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func TestFilterErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct{ filter, want string }{
		{`{"year": {"$gte": [1]}}`, `filter.year.$gte: want a string, number or boolean, not a list`},
		{`{"year": {"$regex": "x"}}`, `filter.year.$regex: unknown operator "$regex"`},
		{`{"$nor": []}`, `filter.$nor: unknown operator "$nor"`},
		{`{"$or": {"a": 1}}`, `filter.$or: want a non-empty list of filter objects`},
		{`{"$or": [1]}`, `filter.$or[0]: want a filter object, not 1`},
		{`{"$not": [1]}`, `filter.$not: want a filter object, not a list`},
		{`{"tag": {"$in": "x"}}`, `filter.tag.$in: want a list of values`},
		{`{"tag": {"$exists": 1}}`, `filter.tag.$exists: want true or false, not 1`},
		{`{"lang": null}`, `filter.lang: null compares with nothing`},
		{`{"lang": {}}`, `filter.lang: want a value or an object of operators`},
		{`{"a..b": 1}`, `empty part between dots`},
		{`{"a.$where": 1}`, `has a part starting with $`},
		{`{"author": {"name": "Ada"}}`, `"name" is not an operator: to compare with an object, name its fields ("author.name")`},
		{`{"$and": [{}]}`, `filter.$and[0]: an empty object is not a condition`},
		{`{"x": 1e999}`, `not a number this filter can compare`},
	} {
		_, err := parseJSONFilter(t, tc.filter).Parse()
		var fe *FilterError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.filter, err, tc.want)
		}
	}
	if _, err := (Filter{"x": math.NaN()}).Parse(); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN: %v", err)
	}
	if _, err := (Filter{"x": struct{}{}}).Parse(); err == nil {
		t.Error("a struct value was accepted")
	}
	if (Filter{"x": []any{1}}).Matches(map[string]any{"x": 1}) {
		t.Error("an invalid filter matched")
	}
}

func TestFilterLimits(t *testing.T) {
	deep := `{"a": 1}`
	for range MaxFilterDepth + 1 {
		deep = `{"$not": ` + deep + `}`
	}
	if _, err := parseJSONFilter(t, deep).Parse(); err == nil || !strings.Contains(err.Error(), "levels deep") {
		t.Errorf("deep: %v", err)
	}
	vals := strings.Repeat(`1,`, MaxFilterList) + `1`
	if _, err := parseJSONFilter(t, `{"a": {"$in": [`+vals+`]}}`).Parse(); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("long $in: %v", err)
	}
	many := map[string]any{}
	for i := range MaxFilterNodes + 1 {
		many[strings.Repeat("k", 1+i%50)+string(rune('a'+i%26))+strings.Repeat("z", i/1300)+itoa(i)] = 1
	}
	if _, err := Filter(many).Parse(); err == nil || !strings.Contains(err.Error(), "conditions") {
		t.Errorf("many: %v", err)
	}
	if _, err := (Filter{strings.Repeat("f", MaxFilterField+1): 1}).Parse(); err == nil {
		t.Error("a long field name was accepted")
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestAndFiltersNarrowOnly(t *testing.T) {
	own := Filter{"tenant": "acme"}
	for _, caller := range []Filter{
		nil,
		{"tenant": "globex"},
		{"$or": []any{map[string]any{"tenant": "globex"}, map[string]any{"tenant": "acme"}}},
		{"tenant": map[string]any{"$ne": "acme"}},
	} {
		f := AndFilters(own, caller)
		for _, tenant := range []string{"acme", "globex"} {
			got := f.Matches(map[string]any{"tenant": tenant})
			want := tenant == "acme" && caller.Matches(map[string]any{"tenant": tenant})
			if got != want {
				t.Errorf("own %v and caller %v on tenant %s: %v, want %v", own, caller, tenant, got, want)
			}
		}
	}
	if AndFilters() != nil || AndFilters(nil, Filter{}) != nil {
		t.Error("and of nothing is not the empty filter")
	}
	if got := AndFilters(nil, own); got.String() != own.String() {
		t.Errorf("and of one: %v", got)
	}
}

func FuzzFilter(f *testing.F) {
	for _, s := range []string{`{"a": 1}`, `{"$or": [{"a": {"$in": [1, "x"]}}, {"$not": {"b.c": {"$gte": "2024"}}}]}`, `{"tag": {"$exists": true}}`} {
		f.Add(s, `{"a": [1, "x"], "b": {"c": "2025"}, "tag": null}`)
	}
	f.Fuzz(func(t *testing.T, filter, metadata string) {
		var fm map[string]any
		if json.Unmarshal([]byte(filter), &fm) != nil {
			return
		}
		var md map[string]any
		if json.Unmarshal([]byte(metadata), &md) != nil {
			return
		}
		e, err := Filter(fm).Parse()
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path, "filter") {
				t.Fatalf("error %v is not a FilterError rooted at filter", err)
			}
			return
		}
		got := e.Matches(md)
		// $not inverts, whatever the filter.
		if (&Expr{Op: OpNot, Kids: []*Expr{orMatchAll(e)}}).Matches(md) == got && e != nil {
			t.Fatalf("$not of %s gave the same answer %v", filter, got)
		}
	})
}

// orMatchAll is e, or a condition that always holds for nil.
func orMatchAll(e *Expr) *Expr {
	if e == nil {
		return &Expr{Op: OpExists, Field: "\x00never", Path: []string{"\x00never"}, Value: false}
	}
	return e
}
