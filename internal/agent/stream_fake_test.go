package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
)

// funcServers are the fake servers answering with a function, per provider.
var funcServers = map[string]func(testing.TB, func(agenttest.Request) agenttest.Reply) *agenttest.Server{
	"openai":    agenttest.NewOpenAIFunc,
	"anthropic": agenttest.NewAnthropicFunc,
}

// TestFuncServer drives several agents at once through one fake server that
// answers from the request: a tool call while there is no tool result, then an
// answer quoting it. Each run must get its own numbers back, streamed or not.
func TestFuncServer(t *testing.T) {
	for _, p := range providers {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", p.name, stream), func(t *testing.T) {
				var seen []agenttest.Request // written by the answer function only: calls are serialized
				srv := funcServers[p.name](t, func(req agenttest.Request) agenttest.Reply {
					seen = append(seen, req)
					if req.Stream != stream {
						t.Errorf("request %d: stream = %v, want %v", req.N, req.Stream, stream)
					}
					if len(req.ToolResults) == 0 {
						var a, b int
						if _, err := fmt.Sscanf(req.UserMessage, "add %d and %d", &a, &b); err != nil {
							return agenttest.Reply{Text: "I only add: " + err.Error()}
						}
						return agenttest.Reply{Calls: []agenttest.Call{{ID: fmt.Sprintf("call_%d", req.N), Name: "add", Args: fmt.Sprintf(`{"a":%d,"b":%d}`, a, b)}},
							InputTokens: 10, OutputTokens: 3}
					}
					r := req.ToolResults[0]
					return agenttest.Reply{Text: fmt.Sprintf("%s (for %s) gives %s", req.UserMessage, r.CallID, r.Text), InputTokens: 20, OutputTokens: 6}
				})
				a := mustNew(t, agent.Config{ID: "adder", SystemPrompt: "you add", Stream: stream}, p.model(t, srv.BaseURL(), httpClient(t)), testTools(t))

				const runs = 6
				var wg sync.WaitGroup
				errs := make([]error, runs)
				texts := make([]string, runs)
				for i := range runs {
					wg.Go(func() {
						res, err := a.Run(context.Background(), agent.Request{Message: fmt.Sprintf("add %d and %d", i, 100)})
						if err == nil {
							texts[i] = res.Text
						}
						errs[i] = err
					})
				}
				wg.Wait()
				for i := range runs {
					if errs[i] != nil {
						t.Fatalf("run %d: %v", i, errs[i])
					}
					prefix := fmt.Sprintf("add %d and 100 (for call_", i)
					if !strings.HasPrefix(texts[i], prefix) || !strings.HasSuffix(texts[i], fmt.Sprintf(") gives %d", i+100)) {
						t.Errorf("run %d answered %q", i, texts[i])
					}
				}
				if len(seen) != 2*runs || len(srv.Requests()) != 2*runs {
					t.Fatalf("%d requests seen, %d recorded, want %d", len(seen), len(srv.Requests()), 2*runs)
				}
				first := seen[0]
				if first.System != "you add" || !slices.Contains(first.Tools, "add") || !slices.Contains(first.Tools, "wait") || first.Body == nil {
					t.Fatalf("first request read as %+v", first)
				}
			})
		}
	}
}

// TestStreamEndedEarly: a stream the server closes cleanly before its end (no
// finish reason, no message_stop) is an error, not a short answer.
func TestStreamEndedEarly(t *testing.T) {
	partial := map[string]string{
		"openai": `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Half an ans"},"finish_reason":null}]}` + "\n\n",
		"anthropic": "event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n" +
			"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
			"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Half an ans"}}` + "\n\n",
	}
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, partial[p.name])
			}))
			defer srv.Close()
			base := srv.URL
			if p.name == "openai" {
				base += "/v1"
			}
			req := userTurn("hi")
			onText, deltas := collect()
			req.OnText = onText
			_, err := p.model(t, base, httpClient(t)).Generate(context.Background(), req)
			streamFailure(t, p.name, err, "stream ended before")
			if strings.Join(deltas(), "") != "Half an ans" {
				t.Fatalf("deltas = %q", deltas())
			}
		})
	}
}
