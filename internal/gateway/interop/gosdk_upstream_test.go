package interop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// goUpstream is an MCP server written with the go-sdk that offers the part of
// server-everything the client checks use, under the same names and with the
// same answers, so that one transcript of a client's session checks both. It
// also records what only a server sees: whether a call was cancelled.
type goUpstream struct {
	server    *sdk.Server
	mu        sync.Mutex
	cancelled int // trigger-long-running-operation calls whose context ended before they did
	subs      map[string]bool
}

// tinyPNG is a 1×1 PNG: the image content of get-tiny-image.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// startGoUpstream serves a goUpstream over Streamable HTTP on loopback and
// returns it with its endpoint.
func startGoUpstream(t *testing.T) (*goUpstream, string) {
	t.Helper()
	u := &goUpstream{subs: map[string]bool{}}
	u.server = sdk.NewServer(&sdk.Implementation{Name: "go-sdk-upstream", Version: "1.0.0"}, &sdk.ServerOptions{
		CompletionHandler: complete,
		SubscribeHandler: func(_ context.Context, r *sdk.SubscribeRequest) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.subs[r.Params.URI] = true
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *sdk.UnsubscribeRequest) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			delete(u.subs, r.Params.URI)
			return nil
		},
	})
	u.addTools()
	u.addResourcesAndPrompts()
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return u.server }, nil))
	t.Cleanup(srv.Close)
	return u, srv.URL + "/mcp"
}

func (u *goUpstream) cancelledCalls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cancelled
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func object(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s},"required":%s}`, props, req))
}

// args decodes a call's arguments; a bad call is a tool error, as zod's
// validation makes it in server-everything.
func args(r *sdk.CallToolRequest, into any) *sdk.CallToolResult {
	if err := json.Unmarshal(r.Params.Arguments, into); err != nil {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "invalid arguments: " + err.Error()}}}
	}
	return nil
}

func (u *goUpstream) addTools() {
	s := u.server
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes back the input string", InputSchema: object(`"message":{"type":"string"}`, "message")},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Message string }
			if bad := args(r, &a); bad != nil {
				return bad, nil
			}
			return text("Echo: " + a.Message), nil
		})
	s.AddTool(&sdk.Tool{Name: "get-sum", Description: "Returns the sum of two numbers", InputSchema: object(`"a":{"type":"number"},"b":{"type":"number"}`, "a", "b")},
		func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ A, B float64 }
			if bad := args(r, &a); bad != nil {
				return bad, nil
			}
			return text(fmt.Sprintf("The sum of %v and %v is %v.", a.A, a.B, a.A+a.B)), nil
		})
	s.AddTool(&sdk.Tool{Name: "get-tiny-image", Description: "Returns a tiny image", InputSchema: object("")},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "Here's the image you requested:"},
				&sdk.ImageContent{Data: tinyPNG, MIMEType: "image/png"},
				&sdk.TextContent{Text: "The image above is the MCP logo."},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "get-structured-content", Description: "Returns structured content",
		InputSchema:  object(`"location":{"type":"string","enum":["New York","Chicago","Los Angeles"]}`, "location"),
		OutputSchema: object(`"temperature":{"type":"number"},"conditions":{"type":"string"},"humidity":{"type":"number"}`, "temperature", "conditions", "humidity")},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			weather := map[string]any{"temperature": 33, "conditions": "Cloudy", "humidity": 82}
			data, _ := json.Marshal(weather)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(data)}}, StructuredContent: weather}, nil
		})
	s.AddTool(&sdk.Tool{Name: "trigger-long-running-operation", Description: "Reports progress while it runs",
		InputSchema: object(`"duration":{"type":"number"},"steps":{"type":"number"}`)},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			a := struct{ Duration, Steps float64 }{10, 5}
			if bad := args(r, &a); bad != nil {
				return bad, nil
			}
			step := time.Duration(a.Duration / a.Steps * float64(time.Second))
			for i := 1; i <= int(a.Steps); i++ {
				select {
				case <-ctx.Done():
					u.mu.Lock()
					u.cancelled++
					u.mu.Unlock()
					return nil, ctx.Err()
				case <-time.After(step): // the operation's work, as the tool's duration says
				}
				if tok := r.Params.GetProgressToken(); tok != nil {
					_ = r.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: a.Steps})
				}
			}
			return text(fmt.Sprintf("Long running operation completed. Duration: %v seconds, Steps: %v.", a.Duration, a.Steps)), nil
		})
	s.AddTool(&sdk.Tool{Name: "toggle-simulated-logging", Description: "Sends a log message", InputSchema: object("")},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			//lint:ignore SA1019 the gateway relays sampling, logging and roots, still offered by MCP; the test drives them
			_ = r.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "error", Data: "Error-level message"})
			return text("Started simulated, random-leveled logging"), nil
		})
	s.AddTool(&sdk.Tool{Name: "toggle-subscriber-updates", Description: "Notifies the subscribed resources", InputSchema: object("")},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			u.mu.Lock()
			var uris []string
			for uri := range u.subs {
				uris = append(uris, uri)
			}
			u.mu.Unlock()
			for _, uri := range uris {
				_ = u.server.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
			}
			return text("Started simulated resource updates"), nil
		})
	s.AddTool(&sdk.Tool{Name: "trigger-sampling-request", Description: "Asks the client's LLM",
		InputSchema: object(`"prompt":{"type":"string"},"maxTokens":{"type":"number"}`, "prompt")},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			a := struct {
				Prompt    string
				MaxTokens int64
			}{MaxTokens: 100}
			if bad := args(r, &a); bad != nil {
				return bad, nil
			}
			//lint:ignore SA1019 the gateway relays sampling, logging and roots, still offered by MCP; the test drives them
			res, err := r.Session.CreateMessage(ctx, &sdk.CreateMessageParams{
				//lint:ignore SA1019 the gateway relays sampling, logging and roots, still offered by MCP; the test drives them
				Messages:  []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "Resource trigger-sampling-request context: " + a.Prompt}}},
				MaxTokens: a.MaxTokens, SystemPrompt: "You are a helpful test server.",
			})
			if err != nil {
				return nil, err
			}
			data, _ := json.Marshal(res)
			return text("LLM sampling result: \n" + string(data)), nil
		})
	s.AddTool(&sdk.Tool{Name: "trigger-elicitation-request", Description: "Asks the user", InputSchema: object("")},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := r.Session.Elicit(ctx, &sdk.ElicitParams{
				Message:         "Please provide inputs for the following fields:",
				RequestedSchema: object(`"name":{"type":"string","description":"Your full, legal name"}`, "name"),
			})
			if err != nil {
				return nil, err
			}
			data, _ := json.Marshal(res.Content)
			return text(fmt.Sprintf("elicitation %s: %s", res.Action, data)), nil
		})
	s.AddTool(&sdk.Tool{Name: "get-roots-list", Description: "Lists the client's roots", InputSchema: object("")},
		func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			//lint:ignore SA1019 the gateway relays sampling, logging and roots, still offered by MCP; the test drives them
			res, err := r.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, err
			}
			var lines []string
			for _, root := range res.Roots {
				lines = append(lines, root.Name+" "+root.URI)
			}
			return text("Current MCP Roots: " + strings.Join(lines, ", ")), nil
		})
}

func (u *goUpstream) addResourcesAndPrompts() {
	s := u.server
	s.AddResource(&sdk.Resource{URI: "demo://resource/static/document/readme.md", Name: "readme.md", MIMEType: "text/markdown"},
		func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: "# Read me"}}}, nil
		})
	s.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "demo://resource/dynamic/text/{index}", Name: "Dynamic Text Resource", MIMEType: "text/plain"},
		func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			index := strings.TrimPrefix(r.Params.URI, "demo://resource/dynamic/text/")
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "Resource " + index}}}, nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "simple-prompt", Description: "A prompt with no arguments"},
		func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "This is a simple prompt without arguments."}}}}, nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "args-prompt", Description: "A prompt with arguments", Arguments: []*sdk.PromptArgument{
		{Name: "city", Required: true}, {Name: "state"},
	}}, func(_ context.Context, r *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		where := r.Params.Arguments["city"]
		if st := r.Params.Arguments["state"]; st != "" {
			where += ", " + st
		}
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "What's weather in " + where + "?"}}}}, nil
	})
	s.AddPrompt(&sdk.Prompt{Name: "completable-prompt", Description: "Team Management", Arguments: []*sdk.PromptArgument{
		{Name: "department", Required: true}, {Name: "name", Required: true},
	}}, func(_ context.Context, r *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{
			Text: fmt.Sprintf("Please promote %s to the head of the %s team.", r.Params.Arguments["name"], r.Params.Arguments["department"])}}}}, nil
	})
}

// complete offers the departments of completable-prompt, as server-everything does.
func complete(_ context.Context, r *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	var values []string
	if r.Params.Ref != nil && r.Params.Ref.Name == "completable-prompt" && r.Params.Argument.Name == "department" {
		for _, d := range []string{"Engineering", "Sales", "Marketing", "Support"} {
			if strings.HasPrefix(d, r.Params.Argument.Value) {
				values = append(values, d)
			}
		}
	}
	return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: values}}, nil
}
