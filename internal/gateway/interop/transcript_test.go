package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// transcript is what a client saw of each operation, as canonical JSON, so
// that a run through the gateway can be compared with a run straight to the
// upstream.
type transcript map[string]string

func (tr transcript) put(t *testing.T, op string, v any, err error) {
	t.Helper()
	if err != nil {
		tr[op] = "error: " + err.Error()
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	tr[op] = canonical(op, data)
}

// createdAt is the time server-everything writes into the text of a dynamic
// resource: it differs from one read to the next.
var createdAt = regexp.MustCompile(` created at [0-9:]+ [AP]M`)

// canonical returns data with what carries no meaning for the comparison
// taken out: the order of object keys; the order of the entries of a listing
// (a gateway merges listings, and sorts them); "hasMore": false (the
// default); the time in server-everything's dynamic texts; Helix's own
// resources (helix:…), which a Helix gateway serves beside the upstream's;
// and what MCP 2026-07-28 adds to every result (resultType, the server's info
// in _meta) and to listings (ttlMs, cacheScope: caching hints of one server,
// which a merged listing cannot pass on). A go-sdk client stays on 2026-07-28
// with the gateway but falls back to 2025-11-25 with server-everything, so
// those fields tell eras apart, not what the operation did.
func canonical(op string, data []byte) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return createdAt.ReplaceAllString(string(data), "")
	}
	v = canonicalValue(v, strings.HasSuffix(op, "/list"))
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable %v", err)
	}
	return createdAt.ReplaceAllString(string(out), "")
}

// listingKeys are the keys whose lists are listings.
var listingKeys = []string{"tools", "prompts", "resources", "resourceTemplates"}

// eraFields are the fields of a result that MCP 2026-07-28 adds.
var eraFields = []string{"resultType", "ttlMs", "cacheScope"}

func canonicalValue(v any, listing bool) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"hasMore", "required"} { // false is their default
			if x[k] == false {
				delete(x, k)
			}
		}
		for _, k := range eraFields {
			delete(x, k)
		}
		if meta, ok := x["_meta"].(map[string]any); ok {
			delete(meta, "io.modelcontextprotocol/serverInfo")
			if len(meta) == 0 {
				delete(x, "_meta")
			}
		}
		for _, k := range slices.Collect(maps.Keys(x)) {
			x[k] = canonicalValue(x[k], slices.Contains(listingKeys, k))
		}
		return x
	case []any:
		for i := range x {
			x[i] = canonicalValue(x[i], false)
		}
		if listing {
			x = slices.DeleteFunc(x, func(e any) bool {
				m, ok := e.(map[string]any)
				uri, _ := m["uri"].(string)
				return ok && strings.HasPrefix(uri, "helix:")
			})
			slices.SortFunc(x, func(a, b any) int { return strings.Compare(sortKey(a), sortKey(b)) })
		}
		return x
	}
	return v
}

// sortKey orders the entries of a listing: by name, URI or template.
func sortKey(v any) string {
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"name", "uri", "uriTemplate"} {
			if s, ok := m[k].(string); ok {
				return s
			}
		}
	}
	data, _ := json.Marshal(v)
	return string(data)
}

// knownDifferences are the outcomes that are known to differ through the
// gateway from the upstream's own, and why. A key is "client|era|upstream|op"
// where each part may be "*". A listed outcome that comes out the same fails
// the test, so that the list (and docs/gateway.md) stays true.
var knownDifferences = map[string]string{
	"*|2026-07-28|*|roots": "an upstream's roots/list request during a call of a 2026-07-28 client is answered by the gateway's own client, " +
		"with no roots: the gateway does not yet ask that client through an input request",
	"inspector|2025-11-25|server-everything http|tools/list":  toolExecution,
	"inspector|2025-11-25|server-everything stdio|tools/list": toolExecution,
}

// Reasons shared by several entries of knownDifferences.
const (
	toolExecution = "the gateway's tools/list leaves out each tool's execution field ({\"taskSupport\": \"forbidden\"}): " +
		"it serves the upstream's tools as the go-sdk's Tool, which has no such field"
	// notInProtocol is the outcome of an operation the run's protocol does
	// not have (ping on 2026-07-28): it is not compared.
	notInProtocol = "not in the protocol"
)

// expected reports whether the checks of op apply to the run label: not when
// op is a known difference of a run through the gateway (label "" is a run
// straight to the upstream, where every check applies).
func expected(label, op string) bool {
	if label == "" {
		return true
	}
	_, known := knownDifference(label, op)
	return !known
}

// knownDifference returns the reason of the entry of knownDifferences that
// matches the outcome of op in the run label ("client|era|upstream").
func knownDifference(label, op string) (string, bool) {
	want := strings.Split(label+"|"+op, "|")
	for key, reason := range knownDifferences {
		parts := strings.Split(key, "|")
		if len(parts) != len(want) {
			continue
		}
		match := true
		for i, p := range parts {
			match = match && (p == "*" || p == want[i])
		}
		if match {
			return reason, true
		}
	}
	return "", false
}

// compareTranscripts fails the test for each operation whose outcome through
// the gateway differs from its outcome straight to the upstream, unless
// knownDifferences lists it.
func compareTranscripts(t *testing.T, label string, direct, gateway transcript) {
	t.Helper()
	for _, op := range slices.Sorted(maps.Keys(direct)) {
		reason, known := knownDifference(label, op)
		switch {
		case gateway[op] == notInProtocol && !known:
			t.Logf("%s is not in the protocol of the run through the gateway", op)
		case gateway[op] != direct[op] && !known:
			t.Errorf("%s differs through the gateway:\n  direct:  %s\n  gateway: %s", op, direct[op], gateway[op])
		case gateway[op] != direct[op]:
			t.Logf("%s differs through the gateway, as known: %s", op, reason)
		case known:
			t.Errorf("%s comes out the same through the gateway now: take it out of knownDifferences (%s) and docs/gateway.md", op, reason)
		}
	}
	for op := range gateway {
		if _, ok := direct[op]; !ok {
			t.Errorf("%s ran only through the gateway: %s", op, gateway[op])
		}
	}
}

// waitFor waits until cond holds, for something the upstream sends at once
// (a log message, a resource update): the bound is for a broken relay, so
// that it fails in a minute rather than at the test's deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("no %s within a minute", what)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
