package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/agent/anthropic"
	"github.com/arvenza/helix/internal/agent/openai"
	"github.com/arvenza/helix/internal/report"
)

const secretKey = "sk-test-SECRET-0123456789"

// provider is one model provider under the shared suite: how to start its fake
// server and build a model against it.
type provider struct {
	name      string
	server    func(testing.TB, ...agenttest.Reply) *agenttest.Server
	model     func(t testing.TB, baseURL string, hc *http.Client) agent.Model
	checkAuth func(h http.Header) bool
	// structured reports whether the request asked for structured output.
	structured func(body map[string]any) bool
}

var providers = []provider{
	{
		name:   "openai",
		server: agenttest.NewOpenAI,
		model: func(t testing.TB, baseURL string, hc *http.Client) agent.Model {
			temp := 0.2
			m, err := openai.New(openai.Config{Model: "gpt-test", APIKey: secretKey, BaseURL: baseURL, HTTPClient: hc, Temperature: &temp, MaxTokens: 100})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		checkAuth: func(h http.Header) bool { return h.Get("Authorization") == "Bearer "+secretKey },
		structured: func(body map[string]any) bool {
			rf, _ := body["response_format"].(map[string]any)
			return rf["type"] == "json_schema"
		},
	},
	{
		name:   "anthropic",
		server: agenttest.NewAnthropic,
		model: func(t testing.TB, baseURL string, hc *http.Client) agent.Model {
			temp := 0.2
			m, err := anthropic.New(anthropic.Config{Model: "claude-test", APIKey: secretKey, BaseURL: baseURL, HTTPClient: hc, Temperature: &temp})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		// This SDK version sends the API key as a bearer token.
		checkAuth: func(h http.Header) bool {
			return h.Get("X-Api-Key") == secretKey || h.Get("Authorization") == "Bearer "+secretKey
		},
		structured: func(body map[string]any) bool {
			oc, _ := body["output_config"].(map[string]any)
			f, _ := oc["format"].(map[string]any)
			return f["type"] == "json_schema"
		},
	},
}

// httpClient is a client of its own whose idle connections go when the test ends
// (goleak).
func httpClient(t testing.TB) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestProviders runs each provider's suite twice: as is, and with streaming, whose
// turns must come out the same.
func TestProviders(t *testing.T) {
	for _, p := range providers {
		for _, stream := range []bool{false, true} {
			name := p.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) { providerSuite(t, p, stream) })
		}
	}
}

func providerSuite(t *testing.T, p provider, stream bool) {
	setup := func(t *testing.T, cfg agent.Config, replies ...agenttest.Reply) (*agent.Agent, *agenttest.Server) {
		srv := p.server(t, replies...)
		if cfg.RetryBackoff == 0 {
			cfg.RetryBackoff = time.Millisecond
		}
		cfg.Stream = stream
		return mustNew(t, cfg, p.model(t, srv.BaseURL(), httpClient(t)), testTools(t)), srv
	}

	t.Run("ToolCallThenAnswer", func(t *testing.T) {
		a, srv := setup(t, agent.Config{ID: "calc", SystemPrompt: "you add"},
			agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "add", Args: `{"a":2,"b":3}`}}, InputTokens: 11, OutputTokens: 4},
			agenttest.Reply{Text: "five", InputTokens: 20, OutputTokens: 2})
		res, err := a.Run(context.Background(), agent.Request{Message: "2+3?"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != "five" || res.Iterations != 2 || res.ToolCalls != 1 || res.Usage != (agent.Usage{InputTokens: 31, OutputTokens: 6}) {
			t.Fatalf("result = %+v", res)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || !p.checkAuth(srv.Headers()[0]) || (reqs[0]["stream"] == true) != stream {
			t.Fatalf("requests = %v", reqs)
		}
		raw, _ := json.Marshal(reqs[0])
		for _, want := range []string{`"you add"`, `"add"`, `"adds two integers"`, `"2+3?"`, `"temperature":0.2`} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("first request lacks %s: %s", want, raw)
			}
		}
		if got := agenttest.LastToolResults(reqs[1]); len(got) != 1 || got[0] != "5" {
			t.Fatalf("tool results sent = %q", got)
		}
	})

	t.Run("ParallelToolCalls", func(t *testing.T) {
		a, srv := setup(t, agent.Config{ID: "par"},
			agenttest.Reply{Calls: []agenttest.Call{
				{ID: "c1", Name: "add", Args: `{"a":1,"b":1}`},
				{ID: "c2", Name: "fail", Args: `{}`},
				{ID: "c3", Name: "add", Args: `{"a":5,"b":5}`}}},
			agenttest.Reply{Text: "done"})
		res, err := a.Run(context.Background(), agent.Request{Message: "go"})
		if err != nil {
			t.Fatal(err)
		}
		got := agenttest.LastToolResults(srv.Requests()[1])
		if len(got) != 3 || got[0] != "2" || !strings.Contains(got[1], "disk on fire") || got[2] != "10" || res.ToolCalls != 3 {
			t.Fatalf("tool results sent = %q", got)
		}
		// One message answers the whole turn: the assistant's tool calls are
		// followed by three tool messages (OpenAI) or one user message with
		// three tool_result blocks (Anthropic).
		msgs, _ := srv.Requests()[1]["messages"].([]any)
		want := 5
		if p.name == "anthropic" {
			want = 3
		}
		if len(msgs) != want {
			t.Fatalf("second request has %d messages, want %d: %v", len(msgs), want, msgs)
		}
		if first, _ := srv.Requests()[0]["parallel_tool_calls"].(bool); p.name == "openai" && !first {
			t.Errorf("parallel_tool_calls not sent as true: %v", srv.Requests()[0])
		}
	})

	t.Run("ParallelOff", func(t *testing.T) {
		off := false
		a, srv := setup(t, agent.Config{ID: "seq", ParallelToolCalls: &off}, agenttest.Reply{Text: "hi"})
		if _, err := a.Run(context.Background(), agent.Request{Message: "go"}); err != nil {
			t.Fatal(err)
		}
		body := srv.Requests()[0]
		var told bool
		if p.name == "openai" {
			v, ok := body["parallel_tool_calls"].(bool)
			told = ok && !v
		} else {
			tc, _ := body["tool_choice"].(map[string]any)
			told = tc["type"] == "auto" && tc["disable_parallel_tool_use"] == true
		}
		if !told {
			t.Fatalf("request does not turn parallel tool calls off: %v", body)
		}
	})

	t.Run("RetryAfter429And500", func(t *testing.T) {
		rec := &recorder{}
		a, srv := setup(t, agent.Config{ID: "r"},
			agenttest.Reply{Status: 429, Header: map[string]string{"Retry-After": "0"}, Error: "rate limited " + secretKey},
			agenttest.Reply{Status: 500, Error: "boom"},
			agenttest.Reply{Text: "ok"})
		res, err := a.Run(report.WithReporter(context.Background(), rec), agent.Request{Message: "go"})
		if err != nil || res.Text != "ok" || len(srv.Requests()) != 3 {
			t.Fatalf("res %+v, err %v, %d requests", res, err, len(srv.Requests()))
		}
		logs := rec.all()
		if !strings.Contains(logs, "rate limited") || strings.Contains(logs, secretKey) {
			t.Fatalf("logs:\n%s", logs)
		}
	})

	t.Run("RetryAfterHeaderRead", func(t *testing.T) {
		srv := p.server(t, agenttest.Reply{Status: 429, Header: map[string]string{"Retry-After": "7"}, Error: "slow down"})
		_, err := p.model(t, srv.BaseURL(), httpClient(t)).Generate(context.Background(), &agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "hi"}}})
		var pe *agent.ProviderError
		if !errors.As(err, &pe) || pe.StatusCode != 429 || pe.RetryAfter != 7*time.Second || !pe.Retryable() {
			t.Fatalf("err = %#v", err)
		}
	})

	t.Run("ClientErrorSurfacedWithoutKey", func(t *testing.T) {
		a, srv := setup(t, agent.Config{ID: "bad"},
			agenttest.Reply{Status: 401, Error: "invalid api key " + secretKey})
		_, err := a.Run(context.Background(), agent.Request{Message: "go"})
		if err == nil || !strings.Contains(err.Error(), "status 401") || !strings.Contains(err.Error(), "invalid api key [redacted]") || strings.Contains(err.Error(), secretKey) {
			t.Fatalf("err = %v", err)
		}
		if len(srv.Requests()) != 1 {
			t.Fatalf("4xx retried: %d requests", len(srv.Requests()))
		}
	})

	t.Run("MalformedJSON", func(t *testing.T) {
		a, _ := setup(t, agent.Config{ID: "mal"}, agenttest.Reply{Body: `{"choices": [ {"message": `})
		_, err := a.Run(context.Background(), agent.Request{Message: "go"})
		if err == nil || !strings.Contains(err.Error(), p.name+": ") || strings.Contains(err.Error(), secretKey) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("StructuredOutput", func(t *testing.T) {
		a, srv := setup(t, agent.Config{ID: "tr"}, agenttest.Reply{Text: `{"translation":"bonjour"}`})
		res, err := a.Run(context.Background(), agent.Request{Message: "hello in French",
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"translation":{"type":"string"}},"required":["translation"]}`)})
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := res.Structured.(map[string]any); m["translation"] != "bonjour" || !p.structured(srv.Requests()[0]) {
			t.Fatalf("res %+v, request %v", res, srv.Requests()[0])
		}
	})

	t.Run("CancelStopsRequest", func(t *testing.T) {
		a, _ := setup(t, agent.Config{ID: "slow", Timeout: 50 * time.Millisecond}, agenttest.Reply{Block: true})
		_, err := a.Run(context.Background(), agent.Request{Message: "go"})
		if err == nil || !strings.Contains(err.Error(), "timeout 50ms exceeded") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("MemoryAcrossTurns", func(t *testing.T) {
		a, srv := setup(t, agent.Config{ID: "chat"},
			agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "add", Args: `{"a":1,"b":1}`}}},
			agenttest.Reply{Text: "two"},
			agenttest.Reply{Text: "still two"})
		for _, msg := range []string{"1+1?", "sure?"} {
			if _, err := a.Run(context.Background(), agent.Request{Message: msg, SessionID: "s1"}); err != nil {
				t.Fatal(err)
			}
		}
		last := srv.Requests()[2]
		if got := agenttest.LastToolResults(last); len(got) != 1 || got[0] != "2" {
			t.Fatalf("second turn lacks the first turn's tool result: %v", last)
		}
	})
}
