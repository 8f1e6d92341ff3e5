package transport

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowServer has a tool "slow" that answers after a while and "echo".
func slowServer(t *testing.T) *sdk.Server {
	t.Helper()
	srv := echoServer(t)
	srv.AddTool(&sdk.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			time.Sleep(150 * time.Millisecond)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "slow"}}}, nil
		})
	return srv
}

// TestBatchAnswersInOrderWithInvalidElementsInPlace: a 2025-03-26 batch is answered
// as one array in the batch's order (not the order the answers came in), an
// invalid element with its error where it stood, as docs/mcp-server.md says.
func TestBatchAnswersInOrderWithInvalidElementsInPlace(t *testing.T) {
	t.Parallel()
	url := rawServer(t, slowServer(t), Options{})
	sid := initSessionWith(t, url, initBody("2025-03-26", "{}"))
	h := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-03-26"}
	r := send(t, http.MethodPost, url, h, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}},`+
		`{"jsonrpc":"2.0","id":2,"method":"ping"},`+
		`42,`+
		`{"jsonrpc":"2.0","id":null,"method":"ping"},`+
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},`+
		`{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	if r.status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	var answers []struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &answers); err != nil {
		t.Fatalf("batch answer %s: %v", r.body, err)
	}
	want := []struct {
		id   string
		code int
	}{{"1", 0}, {"2", 0}, {"null", -32600}, {"null", -32600}, {"3", 0}}
	if len(answers) != len(want) {
		t.Fatalf("want %d answers, got %s", len(want), r.body)
	}
	for i, w := range want {
		code := 0
		if answers[i].Error != nil {
			code = answers[i].Error.Code
		}
		if string(answers[i].ID) != w.id || code != w.code {
			t.Fatalf("answer %d: id %s code %d, want %+v: %s", i, answers[i].ID, code, w, r.body)
		}
	}
}

// TestBatchBanFollowsTheSessionsVersion: a session that negotiated 2025-06-18 or
// later may not send batches, whatever Mcp-Protocol-Version the POST claims (or
// none); a 2025-03-26 session may.
func TestBatchBanFollowsTheSessionsVersion(t *testing.T) {
	t.Parallel()
	url := rawServer(t, echoServer(t), Options{})
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	sid := initSessionWith(t, url, initBody("2025-06-18", "{}"))
	for _, hv := range []string{"", "2025-03-26"} {
		h := map[string]string{"Mcp-Session-Id": sid}
		if hv != "" {
			h["Mcp-Protocol-Version"] = hv
		}
		if r := send(t, http.MethodPost, url, h, batch); r.status != http.StatusBadRequest {
			t.Fatalf("batch in a 2025-06-18 session, header %q: %d %s", hv, r.status, r.body)
		}
	}
	// initialize asking for 2025-06-18 inside a batch: refused too.
	if r := send(t, http.MethodPost, url, map[string]string{"Mcp-Protocol-Version": "2025-03-26"}, `[`+initBody("2025-06-18", "{}")+`]`); r.status != http.StatusBadRequest {
		t.Fatalf("batch initialize of 2025-06-18: %d %s", r.status, r.body)
	}
	old := initSessionWith(t, url, initBody("2025-03-26", "{}"))
	if r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": old}, batch); r.status != http.StatusOK {
		t.Fatalf("batch in a 2025-03-26 session: %d %s", r.status, r.body)
	}
}

// TestBatchChargesEachCall: the transport asks ChargeCalls for a batch's calls
// beyond the first (notifications cost nothing) and refuses the batch, before any
// call runs, when they are not allowed or cannot be checked.
func TestBatchChargesEachCall(t *testing.T) {
	t.Parallel()
	var asked []int
	allow, fail := true, false
	charge := func(_ *http.Request, n int) (bool, time.Duration, error) {
		asked = append(asked, n)
		if fail {
			return false, 0, errors.New("store down")
		}
		return allow, 1500 * time.Millisecond, nil
	}
	url := rawServer(t, echoServer(t), Options{ChargeCalls: charge})
	sid := initSessionWith(t, url, initBody("2025-03-26", "{}"))
	h := map[string]string{"Mcp-Session-Id": sid}
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`
	if r := send(t, http.MethodPost, url, h, batch); r.status != http.StatusOK || len(asked) != 1 || asked[0] != 2 {
		t.Fatalf("allowed batch: %d %s, asked %v", r.status, r.body, asked)
	}
	allow = false
	if r := send(t, http.MethodPost, url, h, batch); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "2" {
		t.Fatalf("refused batch: %d %v %s", r.status, r.header, r.body)
	}
	fail = true
	if r := send(t, http.MethodPost, url, h, batch); r.status != http.StatusServiceUnavailable {
		t.Fatalf("unchecked batch: %d %s", r.status, r.body)
	}
	// A single call is the middleware's business alone.
	if r := send(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); r.status != http.StatusOK || len(asked) != 3 {
		t.Fatalf("single call: %d, asked %v", r.status, asked)
	}
}

// FuzzBatchLayout: whatever a body holds, decoding it never panics, every element
// of a batch is either served or refused in place, and the answers due follow
// the batch's order.
func FuzzBatchLayout(f *testing.F) {
	for _, s := range []string{`[1,{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `[{"jsonrpc":"2.0","id":null,"method":"x"},{"jsonrpc":"2.0","method":"y"}]`,
		`[[],{},"x",null]`, `[{"jsonrpc":"2.0","id":1e400,"method":"ping"}]`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec, err := decodeBody(data)
		if err != nil || !dec.batch {
			return
		}
		dec.refuseInvalid()
		if len(dec.msgs)+len(dec.refused) != dec.size || len(dec.pos) != len(dec.msgs) {
			t.Fatalf("%q: %d served + %d refused of %d", data, len(dec.msgs), len(dec.refused), dec.size)
		}
		order := answerOrder(dec)
		if len(order) > dec.size {
			t.Fatalf("%q: %d answers for %d elements", data, len(order), dec.size)
		}
		for _, s := range order {
			if s.err != nil && mentionsGoTypes(plainError(s.err).Message) {
				t.Fatalf("%q: %s", data, plainError(s.err).Message)
			}
		}
	})
}
