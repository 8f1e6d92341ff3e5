package interop

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// Protocol eras a go-sdk client speaks: its default, 2026-07-28 (sessionless,
// questions to the client as input-required results), and 2025-11-25 pinned
// (an initialize session, questions as requests to the client).
const (
	era20260728 = ""
	era20251125 = "2025-11-25"
)

// goClient is a go-sdk client session with what the server sent it.
type goClient struct {
	session *sdk.ClientSession
	mu      sync.Mutex
	logs    []string // data of notifications/message
	updated []string // URIs of notifications/resources/updated
	samples int      // sampling/createMessage requests answered
	elicits int      // elicitation/create requests answered
}

// connectGo connects a go-sdk client with sampling and elicitation handlers
// and a root to the server behind transport.
func connectGo(t *testing.T, transport sdk.Transport, era string) *goClient {
	t.Helper()
	c := &goClient{}
	client := sdk.NewClient(&sdk.Implementation{Name: "interop-go", Version: "1.0.0"}, &sdk.ClientOptions{
		//lint:ignore SA1019 the gateway relays sampling, logging and roots, still offered by MCP; the test drives them
		CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			c.mu.Lock()
			c.samples++
			c.mu.Unlock()
			//lint:ignore SA1019 the gateway relays sampling, logging and roots, still offered by MCP; the test drives them
			return &sdk.CreateMessageResult{Role: "assistant", Model: "interop-model", Content: &sdk.TextContent{Text: "sampled answer"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			c.mu.Lock()
			c.elicits++
			c.mu.Unlock()
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace"}}, nil
		},
		//lint:ignore SA1019 the gateway relays sampling, logging and roots, still offered by MCP; the test drives them
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.logs = append(c.logs, fmt.Sprint(r.Params.Data))
		},
		ProgressNotificationHandler: onProgressNotification,
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.updated = append(c.updated, r.Params.URI)
		},
	})
	//lint:ignore SA1019 the gateway relays sampling, logging and roots, still offered by MCP; the test drives them
	client.AddRoots(&sdk.Root{Name: "interop", URI: "file:///srv/interop"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := client.Connect(ctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = session.Close() })
	c.session = session
	return c
}

func (c *goClient) counts() (logs, updated, samples, elicits int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.logs), len(c.updated), c.samples, c.elicits
}

// call calls a tool and records its result under op.
func (c *goClient) call(t *testing.T, tr transcript, op, tool string, arguments map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if arguments == nil {
		arguments = map[string]any{} // server-everything's tools refuse a call without arguments
	}
	res, err := c.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: arguments})
	tr.put(t, op, res, err)
	if err != nil {
		return nil
	}
	return res
}

// everythingOps runs every operation the go-sdk client offers against a
// server-everything (or goUpstream) behind c, with tool and prompt names after
// prefix, and returns the transcript. It checks what a transcript cannot
// show: that notifications and requests to the client arrived.
func everythingOps(t *testing.T, c *goClient, prefix, era, label string) transcript {
	t.Helper()
	tr := transcript{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := c.session

	putPing(t, tr, "ping", s)

	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	schemas := map[string]any{}
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		schemas[tl.Name] = tl.InputSchema
	}
	slices.Sort(names)
	for _, want := range []string{"echo", "get-tiny-image", "get-structured-content", "get-sum", "trigger-long-running-operation"} {
		if !slices.Contains(names, prefix+want) {
			t.Errorf("tools/list has no %s: %v", prefix+want, names)
		}
	}
	tr.put(t, "tools/list", schemas, nil)

	if res := c.call(t, tr, "tools/call text", prefix+"echo", map[string]any{"message": "hello gateway"}); res != nil {
		if len(res.Content) != 1 || res.Content[0].(*sdk.TextContent).Text != "Echo: hello gateway" {
			t.Errorf("echo: %s", tr["tools/call text"])
		}
	}
	if res := c.call(t, tr, "tools/call image", prefix+"get-tiny-image", nil); res != nil {
		found := false
		for _, ct := range res.Content {
			if img, ok := ct.(*sdk.ImageContent); ok && img.MIMEType == "image/png" && len(img.Data) > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("get-tiny-image has no PNG: %s", tr["tools/call image"])
		}
	}
	if res := c.call(t, tr, "tools/call structured", prefix+"get-structured-content", map[string]any{"location": "New York"}); res != nil {
		if m, ok := res.StructuredContent.(map[string]any); !ok || m["temperature"] != float64(33) {
			t.Errorf("get-structured-content: %s", tr["tools/call structured"])
		}
	}
	if res := c.call(t, tr, "tools/call error", prefix+"get-sum", map[string]any{"a": "one", "b": 2}); res != nil && !res.IsError {
		t.Errorf("get-sum with a string: not a tool error: %s", tr["tools/call error"])
	}

	// Progress: each step's notification reaches the caller before the result.
	var progressMu sync.Mutex
	var progress []float64
	onProgress := func(p float64) { progressMu.Lock(); progress = append(progress, p); progressMu.Unlock() }
	res, err := callWithProgress(ctx, s, prefix+"trigger-long-running-operation", map[string]any{"duration": 0.6, "steps": 3}, onProgress)
	tr.put(t, "tools/call progress", res, err)
	// The last step's notification is sent before the result but handled apart
	// from it, so it may come after; the earlier ones come before.
	progressMu.Lock()
	ascending := len(progress) >= 2 && len(progress) <= 3
	for i, p := range progress {
		ascending = ascending && p == float64(i+1)
	}
	if !ascending {
		t.Errorf("progress notifications %v, want 1, 2 (and 3)", progress)
	}
	progressMu.Unlock()

	// Requests to the client, relayed by the gateway (or, on 2026-07-28, input-required rounds).
	_, _, samples, elicits := c.counts()
	c.call(t, tr, "sampling", prefix+"trigger-sampling-request", map[string]any{"prompt": "hello", "maxTokens": 5})
	c.call(t, tr, "elicitation", prefix+"trigger-elicitation-request", nil)
	_, _, samples2, elicits2 := c.counts()
	if expected(label, "sampling") && samples2 != samples+1 || expected(label, "elicitation") && elicits2 != elicits+1 {
		t.Errorf("the client answered %d sampling and %d elicitation requests, want 1 each:\nsampling: %s\nelicitation: %s",
			samples2-samples, elicits2-elicits, tr["sampling"], tr["elicitation"])
	}
	if res := c.call(t, tr, "roots", prefix+"get-roots-list", nil); res != nil && expected(label, "roots") && !strings.Contains(tr["roots"], "file:///srv/interop") {
		t.Errorf("get-roots-list does not show the client's root: %s", tr["roots"])
	}

	resources, err := s.ListResources(ctx, nil)
	tr.put(t, "resources/list", resources, err)
	if err == nil && len(resources.Resources) == 0 {
		t.Error("resources/list is empty")
	}
	templates, err := s.ListResourceTemplates(ctx, nil)
	tr.put(t, "resources/templates/list", templates, err)
	read, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "demo://resource/dynamic/text/1"})
	tr.put(t, "resources/read", read, err)
	if err == nil && (len(read.Contents) != 1 || read.Contents[0].Text == "") {
		t.Errorf("resources/read: %s", tr["resources/read"])
	}

	prompts, err := s.ListPrompts(ctx, nil)
	tr.put(t, "prompts/list", prompts, err)
	for _, name := range []string{"simple-prompt", "args-prompt", "completable-prompt"} {
		if err == nil && !slices.ContainsFunc(prompts.Prompts, func(p *sdk.Prompt) bool { return p.Name == prefix+name }) {
			t.Errorf("prompts/list has no %s", prefix+name)
		}
	}
	got, err := s.GetPrompt(ctx, &sdk.GetPromptParams{Name: prefix + "simple-prompt"})
	tr.put(t, "prompts/get simple", got, err)
	got, err = s.GetPrompt(ctx, &sdk.GetPromptParams{Name: prefix + "args-prompt", Arguments: map[string]string{"city": "Paris"}})
	tr.put(t, "prompts/get args", got, err)
	if err == nil && !strings.Contains(tr["prompts/get args"], "Paris") {
		t.Errorf("args-prompt does not name the city: %s", tr["prompts/get args"])
	}
	completion, err := s.Complete(ctx, &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/prompt", Name: prefix + "completable-prompt"},
		Argument: sdk.CompleteParamsArgument{Name: "department", Value: "E"},
	})
	tr.put(t, "completion/complete", completion, err)
	if err == nil && !slices.Equal(completion.Completion.Values, []string{"Engineering"}) {
		t.Errorf("completion of department E: %v", completion.Completion.Values)
	}

	if era == era20251125 {
		sessionNotifications(t, c, tr, prefix, label)
	}

	// Cancellation: the caller gives up after the first progress notification;
	// the call ends with the caller's error and the session goes on.
	callCtx, stop := context.WithCancel(ctx)
	first := make(chan struct{})
	var once sync.Once
	_, err = callWithProgress(callCtx, s, prefix+"trigger-long-running-operation", map[string]any{"duration": 60, "steps": 60},
		func(float64) { once.Do(func() { close(first); stop() }) })
	stop()
	select {
	case <-first:
	default:
		t.Errorf("the long call ended before any progress: %v", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call ended with %v, want context.Canceled", err)
	}
	putPing(t, tr, "ping after cancel", s)
	return tr
}

// putPing records a ping as op where the session's protocol has ping. MCP
// 2026-07-28 removed it: the go-sdk client still sends it, without the _meta
// every request of that protocol carries, and a server of that protocol
// refuses it, Helix as the gateway (TestGoSDKClientPingLikePlainHelix holds
// the gateway to plain Helix there). A go-sdk client falls back to 2025-11-25
// with each upstream here, so the run straight to it says nothing about that.
func putPing(t *testing.T, tr transcript, op string, s *sdk.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.InitializeResult().ProtocolVersion >= "2026-07-28" {
		tr[op] = notInProtocol
		return
	}
	tr.put(t, op, "pong", s.Ping(ctx, nil))
}

// sessionNotifications checks what reaches only a client with a session:
// logging/setLevel and log messages, resources/subscribe and updates.
func sessionNotifications(t *testing.T, c *goClient, tr transcript, prefix, label string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := c.session
	//lint:ignore SA1019 the gateway relays sampling, logging and roots, still offered by MCP; the test drives them
	tr.put(t, "logging/setLevel", "ok", s.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}))
	c.call(t, tr, "toggle logging", prefix+"toggle-simulated-logging", nil)
	waitFor(t, "log message from the upstream", func() bool { logs, _, _, _ := c.counts(); return logs > 0 })
	c.call(t, tr, "toggle logging off", prefix+"toggle-simulated-logging", nil)

	const uri = "demo://resource/dynamic/text/1"
	tr.put(t, "resources/subscribe", "ok", s.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}))
	c.call(t, tr, "toggle updates", prefix+"toggle-subscriber-updates", nil)
	if expected(label, "resources/subscribe") {
		waitFor(t, "notifications/resources/updated for "+uri, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return slices.Contains(c.updated, uri)
		})
	}
	c.call(t, tr, "toggle updates off", prefix+"toggle-subscriber-updates", nil)
	tr.put(t, "resources/unsubscribe", "ok", s.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}))
	// Texts that name the upstream's session differ by nature.
	for _, op := range []string{"toggle logging", "toggle logging off", "toggle updates", "toggle updates off"} {
		delete(tr, op)
	}
}

// callWithProgress calls tool with a progress token and reports each progress
// notification of that token to onProgress.
func callWithProgress(ctx context.Context, s *sdk.ClientSession, tool string, arguments map[string]any, onProgress func(float64)) (*sdk.CallToolResult, error) {
	token := fmt.Sprintf("progress-%d", time.Now().UnixNano())
	progressHandlers.Store(token, onProgress)
	defer progressHandlers.Delete(token)
	params := &sdk.CallToolParams{Name: tool, Arguments: arguments}
	params.SetProgressToken(token)
	return s.CallTool(ctx, params)
}

// progressHandlers routes progress notifications by token (the go-sdk has one
// handler per client).
var progressHandlers sync.Map

func onProgressNotification(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
	if f, ok := progressHandlers.Load(fmt.Sprint(r.Params.ProgressToken)); ok {
		f.(func(float64))(r.Params.Progress)
	}
}

// everythingCommand runs server-everything over stdio for a direct session.
func everythingCommand(t *testing.T) *exec.Cmd {
	return exec.Command(testtools.Node(t), testtools.NPMBin(t, "mcp-server-everything"), "stdio")
}

// TestGoSDKClientPingLikePlainHelix: a go-sdk client of MCP 2026-07-28 pings
// plain Helix and the gateway in front of it: both answer alike (the protocol
// has no ping; the client sends it without the _meta that protocol requires).
func TestGoSDKClientPingLikePlainHelix(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the helix binary")
	}
	helix := serveConformance(t)
	gw := startGateway(t, helix, "")
	ping := func(url string) string {
		c := connectGo(t, &sdk.StreamableClientTransport{Endpoint: url}, era20260728)
		if v := c.session.InitializeResult().ProtocolVersion; v < "2026-07-28" {
			t.Fatalf("%s: the client negotiated %s", url, v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return fmt.Sprint(c.session.Ping(ctx, nil))
	}
	direct, through := ping(helix), ping(gw)
	if direct != through {
		t.Errorf("ping on 2026-07-28:\n  plain Helix: %s\n  gateway:     %s", direct, through)
	}
	t.Logf("ping on 2026-07-28, plain Helix and the gateway: %s", direct)
}

func TestGoSDKClientThroughGateway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the helix binary and Node")
	}
	type upstream struct {
		name    string
		direct  func(t *testing.T) sdk.Transport
		gateway func(t *testing.T) string
		after   func(t *testing.T) // checks of the upstream's side
	}
	var goUp *goUpstream
	var goURL string
	upstreams := []upstream{
		{
			name: "server-everything stdio",
			direct: func(t *testing.T) sdk.Transport {
				return &sdk.CommandTransport{Command: everythingCommand(t)}
			},
			gateway: func(t *testing.T) string { return stdioEverythingGateway(t, "") },
		},
		{
			name: "server-everything http",
			direct: func(t *testing.T) sdk.Transport {
				return &sdk.StreamableClientTransport{Endpoint: startEverythingHTTP(t)}
			},
			gateway: func(t *testing.T) string { return startGateway(t, startEverythingHTTP(t), "") },
		},
		{
			name: "go-sdk server",
			direct: func(t *testing.T) sdk.Transport {
				goUp, goURL = startGoUpstream(t)
				return &sdk.StreamableClientTransport{Endpoint: goURL}
			},
			gateway: func(t *testing.T) string { return startGateway(t, goURL, "") },
			after: func(t *testing.T) {
				// The gateway cancelled the upstream's call when its caller cancelled.
				waitFor(t, "cancellation of the go-sdk server's call through the gateway", func() bool { return goUp.cancelledCalls() >= 2 })
			},
		},
	}
	for _, up := range upstreams {
		t.Run(up.name, func(t *testing.T) {
			for _, era := range []string{era20251125, era20260728} {
				name := era
				if name == "" {
					name = "2026-07-28"
				}
				t.Run(name, func(t *testing.T) {
					label := "go|" + name + "|" + up.name
					direct := everythingOps(t, connectGo(t, up.direct(t), era), "", era, "")
					through := everythingOps(t, connectGo(t, &sdk.StreamableClientTransport{Endpoint: up.gateway(t)}, era), "", era, label)
					compareTranscripts(t, label, direct, through)
					if up.after != nil {
						up.after(t)
					}
				})
			}
		})
	}
}
