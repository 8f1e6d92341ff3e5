package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/ask"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/pkg/uri"
)

// eras are the two ways a server asks: a request of its own on a session of
// 2025-11-25, and input requests answered with a retry on 2026-07-28.
// A go-sdk server serves 2026-07-28 only when stateless, and asks a legacy
// client only when it is not.
var eras = []struct {
	name, version string
	stateless     bool
}{
	{"legacy", "2025-11-25", false},
	{"2026-07-28", "", true}, // the go-sdk's latest
}

// askingServer is a go-sdk server whose tools ask the client, written the
// 2026-07-28 way (input requests); for a session of 2025-11-25 the go-sdk server
// sends them as requests and calls the tool again with the answers.
//
//	form           a form with defaults for every field (name, age)
//	form_required  a form whose required field "token" has no default
//	huge_form      a form with 1000 fields
//	deep_form      a form whose field nests an object
//	sample         a sampling request with one short message
//	huge_sample    a sampling request with 10 MB of messages
func askingServer(t *testing.T, stateless bool) (url string, version *atomic.Value) {
	t.Helper()
	version = &atomic.Value{} // the protocol of the last call
	srv := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	form := func(name string, schema map[string]any) {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				version.Store(req.ProtocolVersion())
				if r, ok := req.Params.InputResponses["q"].(*sdk.ElicitResult); ok {
					b, _ := json.Marshal(r.Content)
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: r.Action + " " + string(b)}}}, nil
				}
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{
					"q": &sdk.ElicitParams{Message: "Who are you?\x1b]0;pwned\x07", RequestedSchema: schema}}}, nil
			})
	}
	form("form", map[string]any{"type": "object", "properties": map[string]any{
		"name": map[string]any{"type": "string", "default": "Ada"},
		"age":  map[string]any{"type": "integer", "default": 36},
	}})
	form("form_required", map[string]any{"type": "object", "properties": map[string]any{
		"name":  map[string]any{"type": "string", "default": "Ada"},
		"token": map[string]any{"type": "string"},
	}, "required": []any{"token"}})
	hugeProps := map[string]any{}
	for i := range 1000 {
		hugeProps[fmt.Sprintf("f%d", i)] = map[string]any{"type": "string", "default": "x"}
	}
	form("huge_form", map[string]any{"type": "object", "properties": hugeProps})
	deep := map[string]any{"type": "string"}
	for range 200 {
		deep = map[string]any{"type": "object", "properties": map[string]any{"x": deep}}
	}
	form("deep_form", map[string]any{"type": "object", "properties": map[string]any{"d": deep}})
	sample := func(name string, text string) {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				version.Store(req.ProtocolVersion())
				//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still in the window
				if r, ok := req.Params.InputResponses["m"].(*sdk.CreateMessageWithToolsResult); ok {
					out := "model=" + r.Model
					for _, c := range r.Content {
						if tc, ok := c.(*sdk.TextContent); ok {
							out += " text=" + tc.Text
						}
					}
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}}, nil
				}
				//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still in the window
				p := &sdk.CreateMessageParams{MaxTokens: 10, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}}}
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"m": p}}, nil
			})
	}
	sample("sample", "say hi")
	sample("huge_sample", strings.Repeat("A", 10<<20))
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(hs.Close)
	return hs.URL, version
}

func answersConn(t *testing.T, url, version string, a mcpclient.Answers) *mcpclient.Conn {
	t.Helper()
	c, err := mcpclient.NewConn(mcpclient.Config{Endpoint: url, ProtocolVersion: version, Answers: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func resultText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	text, err := mcpclient.BodyFromResult(res)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func TestAnswersRefuseByDefault(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			url, _ := askingServer(t, era.stateless)
			c := answersConn(t, url, era.version, mcpclient.Answers{})
			_, err := c.CallTool(t.Context(), "form", nil)
			if err == nil || !strings.Contains(err.Error(), "does not answer elicitation") || !strings.Contains(err.Error(), "onElicit") {
				t.Fatalf("elicitation: got %v, want a refusal naming onElicit", err)
			}
			_, err = c.CallTool(t.Context(), "sample", nil)
			if err == nil || !strings.Contains(err.Error(), "does not answer sampling") || !strings.Contains(err.Error(), "onSample") {
				t.Fatalf("sampling: got %v, want a refusal naming onSample", err)
			}
		})
	}
}

func TestAnswersDefaults(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			url, version := askingServer(t, era.stateless)
			c := answersConn(t, url, era.version, mcpclient.Answers{Elicit: mcpclient.AnswerDefaults})
			res, err := c.CallTool(t.Context(), "form", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != `accept {"age":36,"name":"Ada"}` {
				t.Fatalf("form answered %q", got)
			}
			if want := map[bool]string{false: "2025-11-25", true: "2026-07-28"}[era.stateless]; version.Load() != want {
				t.Fatalf("the call was made on protocol %v, want %s", version.Load(), want)
			}
			// A required field without a default declines the form.
			res, err = c.CallTool(t.Context(), "form_required", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "decline null" {
				t.Fatalf("form_required answered %q, want a decline", got)
			}
		})
	}
}

// fakeCaller is Helix's own MCP caller as the ask package sees it.
type fakeCaller struct {
	elicit func(*ask.Elicitation) (*ask.ElicitAnswer, error)
	sample func(*ask.Sampling) (*ask.SampleAnswer, error)
	asked  atomic.Int64
}

func (f *fakeCaller) Elicit(_ context.Context, q *ask.Elicitation) (*ask.ElicitAnswer, error) {
	f.asked.Add(1)
	return f.elicit(q)
}

func (f *fakeCaller) Sample(_ context.Context, q *ask.Sampling) (*ask.SampleAnswer, error) {
	f.asked.Add(1)
	return f.sample(q)
}

func (f *fakeCaller) Roots(context.Context, *ask.RootsQuestion) ([]ask.Root, error) {
	return nil, errors.New("no roots")
}

func TestAnswersForward(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			url, _ := askingServer(t, era.stateless)
			c := answersConn(t, url, era.version, mcpclient.Answers{Elicit: mcpclient.AnswerForward, Sample: mcpclient.AnswerForward})
			var ids []string
			caller := &fakeCaller{
				elicit: func(q *ask.Elicitation) (*ask.ElicitAnswer, error) {
					ids = append(ids, q.ID)
					if !strings.HasPrefix(q.Message, "Who are you?") || q.Schema["properties"] == nil {
						return nil, fmt.Errorf("the question arrived as %+v", q)
					}
					return &ask.ElicitAnswer{Action: ask.ActionAccept, Content: map[string]any{"name": "Grace", "age": 85}}, nil
				},
				sample: func(q *ask.Sampling) (*ask.SampleAnswer, error) {
					if len(q.Messages) != 1 || q.Messages[0].Text != "say hi" {
						return nil, fmt.Errorf("the sampling arrived as %+v", q)
					}
					return &ask.SampleAnswer{Model: "top-model", Message: ask.Message{Role: "assistant", Text: "hi"}}, nil
				},
			}
			ctx := ask.WithClient(t.Context(), caller)
			res, err := c.CallTool(ctx, "form", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != `accept {"age":85,"name":"Grace"}` {
				t.Fatalf("form answered %q", got)
			}
			res, err = c.CallTool(ctx, "sample", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "model=top-model text=hi" {
				t.Fatalf("sample answered %q", got)
			}
			// The same question has the same id, so that a retry finds its answer.
			if _, err := c.CallTool(ctx, "form", nil); err != nil {
				t.Fatal(err)
			}
			if len(ids) != 2 || ids[0] != ids[1] || ids[0] == "" {
				t.Fatalf("question ids %q: want one id, twice", ids)
			}
		})
	}
}

// TestAnswersForwardInterrupt: when Helix's caller must answer first (2026-07-28
// at the top), the call returns that interrupt, whatever the upstream server
// answered meanwhile.
func TestAnswersForwardInterrupt(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			url, _ := askingServer(t, era.stateless)
			c := answersConn(t, url, era.version, mcpclient.Answers{Elicit: mcpclient.AnswerForward})
			caller := &fakeCaller{elicit: func(*ask.Elicitation) (*ask.ElicitAnswer, error) { return nil, ask.ErrInputRequired }}
			_, err := c.CallTool(ask.WithClient(t.Context(), caller), "form", nil)
			if !errors.Is(err, ask.ErrInputRequired) {
				t.Fatalf("got %v, want ask.ErrInputRequired", err)
			}
		})
	}
}

func TestAnswersForwardWithNobodyToAsk(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			url, _ := askingServer(t, era.stateless)
			c := answersConn(t, url, era.version, mcpclient.Answers{Elicit: mcpclient.AnswerForward})
			_, err := c.CallTool(t.Context(), "form", nil)
			if !errors.Is(err, mcpclient.ErrNobodyToForward) {
				t.Fatalf("got %v, want ErrNobodyToForward", err)
			}
		})
	}
}

// fakeSampler is an agent's model.
type fakeSampler struct{}

func (fakeSampler) Sample(_ context.Context, q *ask.Sampling) (*ask.SampleAnswer, error) {
	return &ask.SampleAnswer{Model: "agent-model", Message: ask.Message{Role: "assistant", Text: "echo " + q.Messages[0].Text}}, nil
}

func TestAnswersHostileServer(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			url, _ := askingServer(t, era.stateless)
			caller := &fakeCaller{
				elicit: func(*ask.Elicitation) (*ask.ElicitAnswer, error) {
					return &ask.ElicitAnswer{Action: ask.ActionAccept, Content: map[string]any{}}, nil
				},
				sample: func(*ask.Sampling) (*ask.SampleAnswer, error) {
					return &ask.SampleAnswer{Message: ask.Message{Role: "assistant", Text: "x"}}, nil
				},
			}
			c := answersConn(t, url, era.version, mcpclient.Answers{Elicit: mcpclient.AnswerForward, Sample: mcpclient.AnswerForward})
			ctx := ask.WithClient(t.Context(), caller)
			for tool, want := range map[string]string{
				"huge_form":   "1000 fields",
				"deep_form":   "only primitive properties are allowed",
				"huge_sample": "bytes Helix accepts",
			} {
				res, err := c.CallTool(ctx, tool, nil)
				if err == nil {
					t.Fatalf("%s: the call succeeded with %v", tool, res)
				}
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("%s: got %v, want an error with %q", tool, err, want)
				}
			}
			if n := caller.asked.Load(); n != 0 {
				t.Fatalf("Helix's caller was asked %d hostile questions", n)
			}
			// The connection still works.
			c2 := answersConn(t, url, era.version, mcpclient.Answers{Sample: "agent:a", Sampler: fakeSampler{}})
			res, err := c2.CallTool(t.Context(), "sample", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "model=agent-model text=echo say hi" {
				t.Fatalf("sample answered %q", got)
			}
		})
	}
}

func TestParseAnswerPolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, want string
	}{
		{"mcp://h:1/t", ""},
		{"mcp://h:1/t?onElicit=defaults&onSample=agent:writer", ""},
		{"mcp://h:1/t?onElicit=forward&onSample=forward", ""},
		{"mcp://h:1/t?onElicit=always", "refuse, defaults or forward"},
		{"mcp://h:1/t?onSample=defaults", "sampling has no defaults"},
		{"mcp://h:1/t?onSample=agent:", "names no agent"},
		{"mcp://h:1/t?onSample=model", "refuse, forward, agent:<id>"},
	} {
		u, err := uri.Parse(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = mcpclient.ParseURI(u)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: got %v, want %q", tc.raw, err, tc.want)
		}
	}
}

// TestAnswersForwardAmbiguousOnSharedLegacySession: over a session of
// 2025-11-25 a question does not name its call; with two forwarding calls in
// flight Helix cannot tell whose caller to ask, and says so instead of guessing.
func TestAnswersForwardAmbiguousOnSharedLegacySession(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 2)
	both := make(chan struct{})
	srv := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "form", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			arrived <- struct{}{}
			select { // the question is asked once both calls are in flight
			case <-both:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if _, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Who?"}); err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "answered"}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	go func() {
		<-arrived
		<-arrived
		close(both)
	}()
	c := answersConn(t, hs.URL, "2025-11-25", mcpclient.Answers{Elicit: mcpclient.AnswerForward})
	caller := &fakeCaller{elicit: func(*ask.Elicitation) (*ask.ElicitAnswer, error) {
		return &ask.ElicitAnswer{Action: ask.ActionDecline}, nil
	}}
	ctx := ask.WithClient(t.Context(), caller)
	texts := make(chan string, 2)
	for range 2 {
		go func() {
			res, err := c.CallTool(ctx, "form", nil)
			if err != nil {
				texts <- err.Error()
				return
			}
			text, _ := mcpclient.BodyFromResult(res)
			texts <- text
		}()
	}
	// The first question finds two calls and is refused. Its call may then end
	// before the second question is handled, which then belongs to the only call
	// left and is forwarded.
	ambiguous, answered := 0, 0
	for range 2 {
		switch got := <-texts; {
		case strings.Contains(got, "cannot tell whose caller"):
			ambiguous++
		case got == "answered":
			answered++
		default:
			t.Errorf("a call ended with %q", got)
		}
	}
	if ambiguous == 0 || int64(answered) != caller.asked.Load() {
		t.Fatalf("%d calls refused as ambiguous, %d answered, the caller asked %d times; want at least one refusal and one question per answer",
			ambiguous, answered, caller.asked.Load())
	}
}

// failingElicitor refuses every form, as helix mcp call does with an --elicit
// value the form does not allow.
type failingElicitor struct{}

func (failingElicitor) Elicit(context.Context, *ask.Elicitation) (*ask.ElicitAnswer, error) {
	return nil, errors.New(`--elicit name: "x" is too short`)
}

// TestAnswerFailureIsNotAConnectionFailure: when Helix's own answer fails (the
// person's value is invalid), the call says so, not that the connection failed
// after the request was sent.
func TestAnswerFailureIsNotAConnectionFailure(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			url, _ := askingServer(t, era.stateless)
			c := answersConn(t, url, era.version, mcpclient.Answers{Elicitor: failingElicitor{}})
			_, err := c.CallTool(t.Context(), "form", nil)
			if err == nil || !strings.Contains(err.Error(), `--elicit name: "x" is too short`) {
				t.Fatalf("got %v, want the elicitor's error", err)
			}
			if strings.Contains(err.Error(), "connection failed") {
				t.Errorf("an answer's failure reported as a broken connection: %v", err)
			}
		})
	}
}
