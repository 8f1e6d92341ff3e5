package app_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// tenantDocs feeds the pipeline kb through direct://add: two documents for
// tenant alice, two for bob, each tenant's taken from the Tenant header by the
// rag-ingest step's metadata: — over the tenant the body claims.
func tenantDocs(t *testing.T, a *app.App) {
	t.Helper()
	for _, d := range []struct{ tenant, id, text string }{
		{"alice", "a1", "Alice's invoice for the printer repair is due in March."},
		{"alice", "a2", "Alice pays every invoice by bank transfer."},
		{"bob", "b1", "Bob's invoice for the server rack is overdue."},
		{"bob", "b2", "Bob asked for a copy of the invoice."},
	} {
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"id": d.id, "text": d.text, "metadata": map[string]any{"tenant": "mallory"}})
		ex.In().SetHeader("Tenant", d.tenant)
		if err := a.Context().Send(callCtx(t), "direct://add", ex); err != nil {
			t.Fatalf("ingest %s: %v", d.id, err)
		}
	}
}

// docIDs are the doc_id of a json pipeline answer, sorted.
func docIDs(t *testing.T, text string) []string {
	t.Helper()
	var out struct {
		Results []struct {
			DocID    string         `json:"doc_id"`
			Metadata map[string]any `json:"metadata"`
		}
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("answer %q: %v", text, err)
	}
	var ids []string
	for _, r := range out.Results {
		ids = append(ids, r.DocID)
	}
	slices.Sort(ids)
	return ids
}

// hostileFilters try to reach another tenant's chunks, or every chunk, through
// the filter argument of the tool.
func hostileFilters(other string) []any {
	return []any{
		map[string]any{"tenant": other},
		map[string]any{"tenant": map[string]any{"$ne": "nobody"}},
		map[string]any{"$or": []any{map[string]any{"tenant": other}, map[string]any{"team": "ops"}}},
		map[string]any{"tenant": map[string]any{"$in": []any{"alice", "bob"}}},
		map[string]any{"$not": map[string]any{"tenant": "nobody"}},
		map[string]any{"tenant": map[string]any{"$exists": true}},
	}
}

// A pipeline's filter bound to the caller's API key name: through real MCP
// calls, alice and bob each see only their own tenant's chunks, and no filter
// argument reaches the other's (the caller's filter is ANDed with the
// pipeline's, never put in its place).
func TestPipelineTenantFilterBoundToAPIKeyName(t *testing.T) {
	t.Parallel()
	a := buildStart(t, `
helix: {data_dir: "`+t.TempDir()+`"}
pipelines:
  - id: kb
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 10, filter: {tenant: "${principal.name}"}}
    output: json
workflows:
  - id: add
    trigger: direct://add
    steps:
      - rag-ingest: {pipeline: kb, metadata: {tenant: "${header.Tenant}", team: ops}}
mcps:
  - id: tools
    addr: 127.0.0.1:0
    api_keys: [{key: key-alice, name: alice}, {key: key-bob, name: bob}, key-nameless]
    expose: [kb]
`, quiet)
	tenantDocs(t, a)
	url := serverURL(t, a, "tools") + "/mcp"
	session := func(key string) *sdk.ClientSession {
		cs, err := sdkSession(t, url, http.Header{"Authorization": {"Bearer " + key}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	for _, c := range []struct {
		key, other string
		want       []string
	}{{"key-alice", "bob", []string{"a1", "a2"}}, {"key-bob", "alice", []string{"b1", "b2"}}} {
		cs := session(c.key)
		text, isErr := call(t, cs, "kb", map[string]any{"query": "invoice"})
		if got := docIDs(t, text); isErr || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v (isError %v), want %v", c.key, got, isErr, c.want)
		}
		for _, f := range hostileFilters(c.other) {
			text, isErr := call(t, cs, "kb", map[string]any{"query": "invoice", "filter": f})
			if isErr {
				t.Errorf("%s with filter %v: %s", c.key, f, text)
				continue
			}
			for _, id := range docIDs(t, text) {
				if !slices.Contains(c.want, id) {
					t.Errorf("%s with filter %v reached %s", c.key, f, id)
				}
			}
		}
	}
	// A key without a name has no principal.name: the call fails (closed),
	// it does not match the chunks without a tenant, nor every chunk.
	text, isErr := call(t, session("key-nameless"), "kb", map[string]any{"query": "invoice"})
	if !isErr || !strings.Contains(text, "principal.name") {
		t.Errorf("nameless key: %q (isError %v), want an error naming ${principal.name}", text, isErr)
	}
}

// The same with an OAuth token's claim: ${principal.claims.tenant}.
func TestPipelineTenantFilterBoundToATokenClaim(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	a := buildStart(t, `
helix: {data_dir: "`+t.TempDir()+`"}
pipelines:
  - id: kb
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 10, filter: {tenant: "${principal.claims.tenant}"}}
    output: json
workflows:
  - id: add
    trigger: direct://add
    steps:
      - rag-ingest: {pipeline: kb, metadata: {tenant: "${header.Tenant}"}}
mcps:
  - id: tools
    addr: 127.0.0.1:0
    expose: [kb]
    auth:
      issuer: `+testIssuer+`
      resource_url: `+testResource+`
      jwks_url: `+is.jwks.URL+`/certs
`, quiet)
	tenantDocs(t, a)
	url := serverURL(t, a, "tools") + "/mcp"
	for _, c := range []struct {
		tenant, other string
		want          []string
	}{{"alice", "bob", []string{"a1", "a2"}}, {"bob", "alice", []string{"b1", "b2"}}} {
		tok := is.token(t, nil, jwt.MapClaims{"sub": "user-" + c.tenant, "tenant": c.tenant})
		cs, err := sdkSession(t, url, http.Header{"Authorization": {"Bearer " + tok}})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		text, isErr := call(t, cs, "kb", map[string]any{"query": "invoice"})
		if got := docIDs(t, text); isErr || !slices.Equal(got, c.want) {
			t.Errorf("tenant %s: %v (isError %v), want %v", c.tenant, got, isErr, c.want)
		}
		for _, f := range hostileFilters(c.other) {
			text, _ := call(t, cs, "kb", map[string]any{"query": "invoice", "filter": f})
			for _, id := range docIDs(t, text) {
				if !slices.Contains(c.want, id) {
					t.Errorf("tenant %s with filter %v reached %s", c.tenant, f, id)
				}
			}
		}
	}
	// A token without the claim: refused, not widened.
	tok := is.token(t, nil, jwt.MapClaims{"sub": "carol"})
	cs, err := sdkSession(t, url, http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if text, isErr := call(t, cs, "kb", map[string]any{"query": "invoice"}); !isErr || !strings.Contains(text, "principal.claims.tenant") {
		t.Errorf("token without the claim: %q (isError %v)", text, isErr)
	}
}

// A filter written in YAML is checked when the file loads, the error at the
// member at fault (file:line:col), for a pipeline's and for a workflow step's.
func TestFilterErrorsInYAML(t *testing.T) {
	t.Parallel()
	pipe := func(filter string) string {
		return "pipelines:\n  - id: p\n    steps:\n      - rag-retrieve:\n          filter:\n" + filter
	}
	step := func(filter string) string {
		return "pipelines:\n  - id: p\nworkflows:\n  - id: w\n    trigger: direct://w\n    steps:\n      - rag-retrieve:\n          pipeline: p\n          filter:\n" + filter
	}
	for _, tc := range []struct{ name, src, want string }{
		{"unknown operator", pipe("            year: {$gte: 2020, $gtx: 3}\n"),
			`helix.yaml:6:32: pipelines[0].steps[0].rag-retrieve.filter.year.$gtx: unknown operator "$gtx" (known: $eq $ne $gt $gte $lt $lte $in $nin $exists)`},
		{"list for a range", pipe("            year: {$gte: [2020]}\n"),
			`helix.yaml:6:20: pipelines[0].steps[0].rag-retrieve.filter.year.$gte: want a string, number or boolean, not a list`},
		{"$in not a list", step("            tag: {$in: ops}\n"),
			`helix.yaml:10:19: workflows[0].steps[0].filter.tag.$in: want a list of values, not "ops"`},
		{"$or of scalars", step("            $or: [a, {team: ops}]\n"),
			`helix.yaml:10:19: workflows[0].steps[0].filter.$or[0]: want a filter object, not "a"`},
		{"$ in a field name", pipe("            a.$where: 1\n"),
			`helix.yaml:6:13: pipelines[0].steps[0].rag-retrieve.filter.a.$where: field name "a.$where" has a part starting with $`},
		{"unknown placeholder", pipe("            tenant: \"${principal.claims.tenant\"\n"),
			`unterminated placeholder`},
		{"bad placeholder root", step("            tenant: \"${caller.tenant}\"\n"),
			`helix.yaml:10:21: workflows[0].steps[0].filter.tenant: unknown placeholder ${caller.tenant}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := buildErr(tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("errors:\n%v\nwant %q", err, tc.want)
			}
		})
	}
	// Placeholders where a list or a boolean goes load (the value comes with
	// the exchange).
	if err := buildErr(pipe("            team: {$in: \"${principal.claims.teams}\"}\n            x: {$exists: \"${header.X}\"}\n")); err != nil {
		t.Errorf("placeholders: %v", err)
	}
}

// buildErr loads and builds src, returning the first stage's error.
func buildErr(src string) error {
	cfg, err := config.LoadBytes("helix.yaml", []byte(src))
	if err != nil {
		return err
	}
	_, err = app.Build(cfg, quiet)
	return err
}

// A tool call's filter argument that cannot be used is a tool error that says
// what is wrong where; the filter's operators are in the tool's input schema.
func TestPipelineToolFilterArgument(t *testing.T) {
	t.Parallel()
	a := buildStart(t, `
helix: {data_dir: "`+t.TempDir()+`"}
pipelines:
  - id: kb
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 10}
    output: json
workflows:
  - id: add
    trigger: direct://add
    steps:
      - rag-ingest: {pipeline: kb, metadata: {tenant: "${header.Tenant}"}}
mcps:
  - id: kb
    addr: "127.0.0.1:0"
    expose: [kb]
`, quiet)
	tenantDocs(t, a)
	cs := mcpSession(t, a, "kb")
	tools, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := json.Marshal(tools.Tools[0].InputSchema)
	for _, op := range []string{"$gte", "$in", "$nin", "$exists", "$or", "$not", "dotted"} {
		if !strings.Contains(string(schema), op) {
			t.Errorf("the input schema does not describe %s: %s", op, schema)
		}
	}
	for _, c := range []struct {
		filter any
		want   string
	}{
		{map[string]any{"year": map[string]any{"$gte": []any{1}}}, "filter.year.$gte: want a string, number or boolean, not a list"},
		{map[string]any{"tenant": map[string]any{"$regex": ".*"}}, `filter.tenant.$regex: unknown operator "$regex"`},
		{map[string]any{"$where": "1"}, `filter.$where: unknown operator "$where"`},
		{"tenant = 'bob' OR 1=1", `want "object"`},
		{map[string]any{"tenant": map[string]any{"$in": make([]any, 1001)}}, "filter.tenant.$in: more than 1000 values"},
		{deepFilter(40), "nested more than 16 levels deep"},
	} {
		text, isErr := call(t, cs, "kb", map[string]any{"query": "invoice", "filter": c.filter})
		if !isErr || !strings.Contains(text, c.want) {
			t.Errorf("filter %.80v: %q (isError %v), want an error with %q", c.filter, text, isErr, c.want)
		}
	}
	// A good filter narrows: lists, operators, and $not.
	text, isErr := call(t, cs, "kb", map[string]any{"query": "invoice", "filter": map[string]any{"$not": map[string]any{"tenant": map[string]any{"$in": []any{"bob"}}}}})
	if got := docIDs(t, text); isErr || !slices.Equal(got, []string{"a1", "a2"}) {
		t.Errorf("$not $in: %v %v", got, isErr)
	}
}

// deepFilter is {"$not": {"$not": … {"a": 1}}}, depth levels.
func deepFilter(depth int) map[string]any {
	f := map[string]any{"a": 1}
	for range depth {
		f = map[string]any{"$not": f}
	}
	return f
}

// An agent called through MCP gives its pipeline tool the caller it acts for:
// the model's filter argument asks for bob's tenant, and alice's agent call
// still finds only alice's documents.
func TestAgentPipelineToolKeepsTheCallersTenant(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAIFunc(t, func(req agenttest.Request) agenttest.Reply {
		if len(req.ToolResults) == 0 {
			return agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "kb", Args: `{"query":"invoice","filter":{"$or":[{"tenant":"bob"},{"tenant":"alice"}]}}`}}}
		}
		return agenttest.Reply{Text: req.ToolResults[0].Text}
	})
	a := buildStart(t, agentYAML(`
helix: {data_dir: "`+t.TempDir()+`"}
pipelines:
  - id: kb
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 10, filter: {tenant: "${principal.name}"}}
    output: json
workflows:
  - id: add
    trigger: direct://add
    steps:
      - rag-ingest: {pipeline: kb, metadata: {tenant: "${header.Tenant}"}}
agents:
  - id: helper
    model: {provider: openai, model: gpt-4o, api_key: k, base_url: FAKE_URL}
    tools: [{name: kb, type: pipeline}]
mcps:
  - id: tools
    addr: 127.0.0.1:0
    api_keys: [{key: key-alice, name: alice}]
    expose: [helper]
`, fake), quiet)
	tenantDocs(t, a)
	cs, err := sdkSession(t, serverURL(t, a, "tools")+"/mcp", http.Header{"Authorization": {"Bearer key-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	text, isErr := call(t, cs, "helper", map[string]any{"message": "my invoices?"})
	if got := docIDs(t, text); isErr || !slices.Equal(got, []string{"a1", "a2"}) {
		t.Errorf("agent's pipeline tool: %v (isError %v): %s", got, isErr, text)
	}
}

// A workflow's rag-retrieve filter with a placeholder is resolved per
// exchange and ANDed with the body's filter; a missing value fails the step.
func TestRetrieveStepFilterPlaceholders(t *testing.T) {
	t.Parallel()
	a := buildStart(t, `
helix: {data_dir: "`+t.TempDir()+`"}
pipelines:
  - id: kb
    steps:
      - rag-retrieve: {strategy: keyword, top_k: 10}
workflows:
  - id: add
    trigger: direct://add
    steps:
      - rag-ingest: {pipeline: kb, metadata: {tenant: "${header.Tenant}"}}
  - id: ask
    trigger: direct://ask
    steps:
      - rag-retrieve: {pipeline: kb, output: json, filter: {tenant: "${header.Tenant}"}}
`, quiet)
	tenantDocs(t, a)
	ask := func(tenant string, body any) (*exchange.Exchange, error) {
		ex := exchange.NewWithBody(exchange.InOut, body)
		if tenant != "" {
			ex.In().SetHeader("Tenant", tenant)
		}
		return ex, a.Context().Send(callCtx(t), "direct://ask", ex)
	}
	for _, c := range []struct {
		body any
		want []string
	}{
		{map[string]any{"query": "invoice"}, []string{"a1", "a2"}},
		{map[string]any{"query": "invoice", "filter": map[string]any{"tenant": "bob"}}, nil},
		{map[string]any{"query": "invoice", "filter": map[string]any{"$or": []any{map[string]any{"tenant": "bob"}, map[string]any{"tenant": "alice"}}}}, []string{"a1", "a2"}},
	} {
		ex, err := ask("alice", c.body)
		if err != nil {
			t.Fatalf("%v: %v", c.body, err)
		}
		b, _ := json.Marshal(ex.In().Body())
		if got := docIDs(t, string(b)); !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.body, got, c.want)
		}
	}
	if _, err := ask("", map[string]any{"query": "invoice"}); err == nil || !strings.Contains(err.Error(), "filter.tenant: ${header.Tenant} is empty") {
		t.Errorf("without the header: %v", err)
	}
	// rag-ingest's metadata placeholder fails closed too: nothing is stored
	// without a tenant.
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"id": "x", "text": "an invoice without a tenant"})
	if err := a.Context().Send(callCtx(t), "direct://add", ex); err == nil || !strings.Contains(err.Error(), "metadata.tenant: ${header.Tenant} is empty") {
		t.Errorf("ingest without the header: %v", err)
	}
}
