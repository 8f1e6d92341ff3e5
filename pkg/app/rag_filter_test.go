package app_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

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
