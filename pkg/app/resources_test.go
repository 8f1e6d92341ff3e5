package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

const primitivesYAML = `
mcps:
  - id: all
    addr: "127.0.0.1:0"
  - id: some
    addr: "127.0.0.1:0"
    expose: [greeting, "app://orders/{id}", touch-notes]
  - id: blocked
    addr: "127.0.0.1:0"
    blocked_tools: [greeting, notes]
resources:
  - uri: app://greeting
    name: greeting
    description: A fixed text
    text: "hello"
  - uri: app://logo
    name: logo
    mime_type: image/png
    blob: iVBORw0KGgo=
  - uri: app://notes
    name: notes
    file: NOTES_FILE
  - uri_template: app://orders/{id}
    name: order
    workflow: get-order
    completions:
      id: ["100", "101", "200"]
prompts:
  - name: greet
    description: Greets somebody
    arguments:
      - {name: who, description: Whom to greet, required: true}
      - {name: tone, description: How}
    completion_workflow: complete-tone
    messages:
      - role: user
        content: "Say hello to ${args.who}."
      - role: assistant
        content:
          starlang: |
            "Hello, %s! (%s)" % (args["who"], args.get("tone", "plain"))
      - content: {resource: "app://orders/${args.who}"}
  - name: from-workflow
    description: Messages from a workflow
    workflow: prompt-messages
workflows:
  - id: get-order
    trigger: direct://get-order
    steps:
      - transform:
          starlang: |
            {"id": payload["id"], "uri": headers["HelixMcpResourceUri"]}
  - id: complete-tone
    trigger: direct://complete-tone
    steps:
      - transform:
          starlang: |
            [t for t in ["friendly", "formal", "funny"] if t.startswith(payload["value"])]
  - id: prompt-messages   # no trigger: only the prompt runs it
    steps:
      - transform:
          starlang: |
            [{"role": "user", "content": "first"}, {"role": "assistant", "content": {"type": "text", "text": "second"}}]
  - id: touch-notes
    trigger: direct://touch-notes
    steps:
      - resource-updated: "app://orders/${body.id}"
`

type updates chan string

func primitivesSession(t *testing.T, a *app.App, id string, got updates) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "primitives-test", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			if got != nil {
				got <- req.Params.URI
			}
		},
	})
	// A 2025-11-25 session: resources/subscribe (2026-07-28 removed it).
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: serverURL(t, a, id) + "/mcp", MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func buildPrimitives(t *testing.T) (*app.App, string) {
	t.Helper()
	notes := filepath.Join(t.TempDir(), "notes.md")
	if err := os.WriteFile(notes, []byte("# Notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadBytes("helix.yaml", []byte(strings.Replace(primitivesYAML, "NOTES_FILE", notes, 1)))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Warnings {
		if strings.Contains(w.Msg, "prompt-messages") {
			t.Errorf("warning about the prompt's workflow: %v", w)
		}
	}
	return startBuilt(t, a), notes
}

func TestResourcesThroughClient(t *testing.T) {
	t.Parallel()
	a, notes := buildPrimitives(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(updates, 4)
	cs := primitivesSession(t, a, "all", got)

	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || !caps.Resources.Subscribe || caps.Resources.ListChanged || caps.Completions == nil {
		t.Fatalf("capabilities %+v %+v", caps.Resources, caps.Completions)
	}
	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	if want := "app://greeting app://logo app://notes helix://routes helix://workflows"; strings.Join(uris, " ") != want {
		t.Fatalf("resources %v, want %s", uris, want)
	}
	lt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(lt.ResourceTemplates) != 1 || lt.ResourceTemplates[0].URITemplate != "app://orders/{id}" {
		t.Fatalf("templates %v %+v", err, lt)
	}

	read := func(uri string) *sdk.ResourceContents {
		t.Helper()
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 {
			t.Fatalf("read %s: %v %+v", uri, err, res)
		}
		return res.Contents[0]
	}
	if c := read("app://greeting"); c.Text != "hello" || c.MIMEType != "text/plain" {
		t.Fatalf("greeting %+v", c)
	}
	if c := read("app://logo"); c.MIMEType != "image/png" || len(c.Blob) != 8 || c.Text != "" {
		t.Fatalf("logo %+v", c)
	}
	if c := read("app://notes"); c.Text != "# Notes\n" || !strings.HasPrefix(c.MIMEType, "text/") {
		t.Fatalf("notes %+v", c)
	}
	if c := read("app://orders/42"); c.MIMEType != "application/json" || c.Text != `{"id":"42","uri":"app://orders/42"}` {
		t.Fatalf("order %+v", c)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "app://nothing"}); err == nil {
		t.Fatal("reading an unknown resource succeeded")
	}

	// A file resource: a change reaches the subscriber (polled once a second).
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "app://notes"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("# Notes\n\nmore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitUpdate(t, got, "app://notes")

	// A workflow signals a template resource's change with resource-updated.
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "app://orders/7"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "touch_notes", Arguments: map[string]any{"id": "7"}})
	if err != nil || res.IsError {
		t.Fatalf("touch-notes: %v %+v", err, res)
	}
	waitUpdate(t, got, "app://orders/7")
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "app://orders/7"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "app://unknown"}); err == nil {
		t.Fatal("subscribing to an unknown resource succeeded")
	}

	// Completion of a template variable from its static list.
	cr, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "app://orders/{id}"},
		Argument: sdk.CompleteParamsArgument{Name: "id", Value: "10"}})
	if err != nil || strings.Join(cr.Completion.Values, ",") != "100,101" || cr.Completion.Total != 2 || cr.Completion.HasMore {
		t.Fatalf("complete id: %v %+v", err, cr)
	}
}

func waitUpdate(t *testing.T, got updates, uri string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case u := <-got:
			if u == uri {
				return
			}
		case <-timeout:
			t.Fatalf("no notifications/resources/updated for %s", uri)
		}
	}
}

func TestPromptsThroughClient(t *testing.T) {
	t.Parallel()
	a, _ := buildPrimitives(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := primitivesSession(t, a, "all", nil)

	lp, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(lp.Prompts) != 2 || lp.Prompts[0].Name != "from-workflow" || lp.Prompts[1].Name != "greet" ||
		len(lp.Prompts[1].Arguments) != 2 || !lp.Prompts[1].Arguments[0].Required {
		t.Fatalf("prompts %v %+v", err, lp)
	}
	gp, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "9", "tone": "warm"}})
	if err != nil || len(gp.Messages) != 3 {
		t.Fatalf("greet: %v %+v", err, gp)
	}
	if m := gp.Messages[0]; m.Role != "user" || m.Content.(*sdk.TextContent).Text != "Say hello to 9." {
		t.Fatalf("message 0 %+v", m)
	}
	if m := gp.Messages[1]; m.Role != "assistant" || m.Content.(*sdk.TextContent).Text != "Hello, 9! (warm)" {
		t.Fatalf("message 1 %+v", m)
	}
	if er, ok := gp.Messages[2].Content.(*sdk.EmbeddedResource); !ok || er.Resource.URI != "app://orders/9" || !strings.Contains(er.Resource.Text, `"id":"9"`) {
		t.Fatalf("message 2 %+v", gp.Messages[2].Content)
	}

	_, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "who") {
		t.Fatalf("missing argument: %v", err)
	}

	gp, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "from-workflow"})
	if err != nil || len(gp.Messages) != 2 || gp.Messages[1].Role != "assistant" || gp.Messages[1].Content.(*sdk.TextContent).Text != "second" {
		t.Fatalf("from-workflow: %v %+v", err, gp)
	}

	cr, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: sdk.CompleteParamsArgument{Name: "tone", Value: "f"}})
	if err != nil || strings.Join(cr.Completion.Values, ",") != "friendly,formal,funny" {
		t.Fatalf("complete tone: %v %+v", err, cr)
	}
}

func TestPrimitivesPerServer(t *testing.T) {
	t.Parallel()
	a, _ := buildPrimitives(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := func(cs *sdk.ClientSession) string {
		lr, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		lt, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range lr.Resources {
			out = append(out, r.Name)
		}
		for _, r := range lt.ResourceTemplates {
			out = append(out, r.Name)
		}
		tl, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range tl.Tools {
			out = append(out, "tool:"+x.Name)
		}
		return strings.Join(out, " ")
	}
	some := primitivesSession(t, a, "some", nil)
	if got, want := names(some), "greeting routes workflows order tool:touch_notes"; got != want {
		t.Fatalf("server some offers %q, want %q", got, want)
	}
	if _, err := some.ReadResource(ctx, &sdk.ReadResourceParams{URI: "app://logo"}); err == nil {
		t.Fatal("server some read a resource it does not expose")
	}
	if _, err := some.GetPrompt(ctx, &sdk.GetPromptParams{Name: "from-workflow"}); err == nil {
		t.Fatal("server some rendered a prompt it does not expose")
	}
	blocked := primitivesSession(t, a, "blocked", nil)
	if got := names(blocked); !strings.HasPrefix(got, "logo routes workflows order tool:") {
		t.Fatalf("server blocked offers %q", got)
	}
	if _, err := blocked.ReadResource(ctx, &sdk.ReadResourceParams{URI: "app://greeting"}); err == nil {
		t.Fatal("server blocked read a blocked resource")
	}
	if err := blocked.Subscribe(ctx, &sdk.SubscribeParams{URI: "app://greeting"}); err == nil {
		t.Fatal("server blocked accepted a subscription to a blocked resource")
	}
	info := a.MCPServers().Servers()
	for _, s := range info {
		if s.ID == "all" && (len(s.Resources) != 4 || len(s.Prompts) != 2) {
			t.Fatalf("info of all: %+v", s)
		}
	}
	raw, _ := json.Marshal(info)
	if !strings.Contains(string(raw), "app://orders/{id}") {
		t.Fatalf("server info lacks the template: %s", raw)
	}
	// The manifest lists what each server offers, after blocked_tools.
	for _, ms := range a.Manifest().MCPServers {
		var rs []string
		for _, r := range ms.Resources {
			rs = append(rs, r.Name)
		}
		var ps []string
		for _, p := range ms.Prompts {
			ps = append(ps, p.Name)
		}
		got := strings.Join(rs, ",") + " / " + strings.Join(ps, ",")
		want := map[string]string{"all": "greeting,logo,notes,order / greet,from-workflow", "some": "greeting,order / ",
			"blocked": "logo,order / greet,from-workflow"}[ms.ID]
		if got != want {
			t.Errorf("manifest of %s: %s, want %s", ms.ID, got, want)
		}
	}
}

func TestPrimitivesValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown workflow", "resources:\n  - {uri: app://x, name: x, workflow: get-ordr}\nworkflows:\n  - {id: get-order, trigger: direct://get-order, steps: [{log: hi}]}\n", `did you mean "get-order"`},
		{"duplicate uri", "resources:\n  - {uri: app://x, name: x, text: a}\n  - {uri: app://x, name: y, text: b}\n", `duplicate resource "app://x"`},
		{"duplicate prompt", "prompts:\n  - {name: p, messages: [{content: a}]}\n  - {name: p, messages: [{content: b}]}\n", `duplicate prompt "p"`},
		{"starlang syntax", "prompts:\n  - name: p\n    messages:\n      - content: {starlang: \"1 +\"}\n", "helix.yaml:4:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := loadErrors(t, tc.yaml)
			if !strings.Contains(errs.Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestPrimitivesLoadErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"two sources", "resources:\n  - {uri: app://x, name: x, text: a, file: b}\n", "helix.yaml:2:44: resources[0].file: a resource takes one of text, blob, file and workflow"},
		{"no source", "resources:\n  - {uri: app://x, name: x}\n", "needs its content"},
		{"bad template", "resources:\n  - {uri_template: \"app://o/{id\", name: x, workflow: w}\n", "unterminated {"},
		{"template without workflow", "resources:\n  - {uri_template: \"app://o/{id}\", name: x, text: a}\n", "needs workflow"},
		{"completion of unknown variable", "resources:\n  - {uri_template: \"app://o/{id}\", name: x, workflow: w, completions: {idd: [a]}}\n", `did you mean "id"`},
		{"relative uri", "resources:\n  - {uri: notes, name: x, text: a}\n", "not an absolute URI"},
		{"unknown key", "resources:\n  - {uri: app://x, name: x, text: a, mimetype: b}\n", `did you mean "mime_type"`},
		{"unknown arg placeholder", "prompts:\n  - {name: p, arguments: [who], messages: [{content: \"hi ${args.whom}\"}]}\n", `did you mean "who"`},
		{"bad role", "prompts:\n  - {name: p, messages: [{role: system, content: hi}]}\n", "unknown message role"},
		{"messages and workflow", "prompts:\n  - {name: p, workflow: w, messages: [{content: hi}]}\n", "messages or workflow, not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.LoadBytes("helix.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
