package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/ask"
)

// signupSchema is a form with a required field without a default, typed fields
// with defaults and bounds, an enum and a multi-select.
var signupSchema = map[string]any{"type": "object", "properties": map[string]any{
	"name":  map[string]any{"type": "string", "description": "Your name\x1b[2J", "minLength": 2.0},
	"age":   map[string]any{"type": "integer", "default": 30.0, "minimum": 0.0, "maximum": 150.0},
	"plan":  map[string]any{"type": "string", "enum": []any{"free", "pro"}, "default": "free"},
	"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"a", "b"}}},
	"agree": map[string]any{"type": "boolean"},
}, "required": []any{"name"}}

func elicitor(input string, interactive bool, pre ...string) (*terminalElicitor, *bytes.Buffer) {
	var out bytes.Buffer
	f := answerFlags{elicit: pre, noInput: !interactive}
	a, err := f.answers(strings.NewReader(input), &out)
	if err != nil {
		panic(err)
	}
	e := a.Elicitor.(*terminalElicitor)
	e.interactive = interactive // a strings.Reader is never a terminal
	return e, &out
}

func TestTerminalElicitorPrompts(t *testing.T) {
	t.Parallel()
	// Required fields come first, then by name. accept; name too short, then
	// right; age out of range, then the default; agree y; plan not in the enum,
	// then pro; tags with an unknown item, then a,b.
	e, out := elicitor("a\nx\nAda\n200\n\ny\nenterprise\npro\na,c\na, b\n", true)
	ans, err := e.Elicit(t.Context(), &ask.Elicitation{Message: "Sign up\x1b]0;pwned\x07 please", Schema: signupSchema})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(ans)
	if want := `{"Action":"accept","Content":{"age":30,"agree":true,"name":"Ada","plan":"pro","tags":["a","b"]}}`; string(got) != want {
		t.Fatalf("answer %s\nwant   %s\nprompts:\n%s", got, want, out)
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Fatalf("the server's escape sequences reached the terminal: %q", out)
	}
	for _, want := range []string{"Sign up please", "name [string, required] — Your name", "has 1 characters", "out of range", `"enterprise" is not one of free, pro`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the prompts lack %q:\n%s", want, out)
		}
	}
}

func TestTerminalElicitorDeclineAndCancel(t *testing.T) {
	t.Parallel()
	for input, want := range map[string]string{"d\n": ask.ActionDecline, "c\n": ask.ActionCancel, "": ask.ActionCancel, "a\n": ask.ActionCancel} {
		e, _ := elicitor(input, true)
		ans, err := e.Elicit(t.Context(), &ask.Elicitation{Message: "m", Schema: signupSchema})
		if err != nil || ans.Action != want {
			t.Errorf("input %q: %+v %v, want %s", input, ans, err, want)
		}
	}
}

func TestTerminalElicitorUnattended(t *testing.T) {
	t.Parallel()
	// Without a value for the required name, the form is declined and says why.
	e, out := elicitor("", false)
	ans, err := e.Elicit(t.Context(), &ask.Elicitation{Message: "Sign up", Schema: signupSchema})
	if err != nil || ans.Action != ask.ActionDecline || !strings.Contains(out.String(), "--elicit name=") {
		t.Fatalf("%+v %v %q", ans, err, out)
	}
	// --elicit answers it; the rest are defaults; a field the form lacks is ignored.
	e, out = elicitor("", false, "name=Ada", "age=41", "agree=true", "nickname=x")
	ans, err = e.Elicit(t.Context(), &ask.Elicitation{Message: "Sign up", Schema: signupSchema})
	got, _ := json.Marshal(ans)
	if err != nil || string(got) != `{"Action":"accept","Content":{"age":41,"agree":true,"name":"Ada","plan":"free"}}` {
		t.Fatalf("%s %v", got, err)
	}
	if !strings.Contains(out.String(), `has no field "nickname"`) {
		t.Errorf("no note about the unknown field: %q", out)
	}
	// A value of the wrong type is an error naming the flag.
	e, _ = elicitor("", false, "name=Ada", "age=old")
	if _, err := e.Elicit(t.Context(), &ask.Elicitation{Message: "m", Schema: signupSchema}); err == nil || !strings.Contains(err.Error(), "--elicit age") {
		t.Fatalf("got %v", err)
	}
	if _, err := (answerFlags{elicit: []string{"=x"}}).answers(strings.NewReader(""), &bytes.Buffer{}); err == nil {
		t.Fatal("--elicit =x was accepted")
	}
}

// TestMCPCallAnswersForms runs helix mcp call against a go-sdk server whose tool
// asks a form: --no-input answers with --elicit and the defaults; sampling is
// refused with a message saying so.
func TestMCPCallAnswersForms(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "signup", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Sign up", RequestedSchema: signupSchema})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res.Content)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Action + " " + string(b)}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "sample", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still in the window
			_, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 5,
				//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still in the window
				Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
			return nil, err
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)

	code, stdout, stderr := execute(t, "mcp", "call", srv.URL, "signup", "--no-input", "--elicit", "name=Ada", "--elicit", "tags=b")
	if code != 0 || stdout != `accept {"age":30,"name":"Ada","plan":"free","tags":["b"]}`+"\n" {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execute(t, "mcp", "call", srv.URL, "signup", "--no-input")
	if code != 0 || stdout != "decline null\n" || !strings.Contains(stderr, "--elicit name=") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	code, _, stderr = execute(t, "mcp", "call", srv.URL, "sample")
	if code != ExitRuntime || !strings.Contains(stderr, "helix mcp call does not answer sampling") || !strings.Contains(stderr, "no model") {
		t.Fatalf("exit %d\nstderr %q", code, stderr)
	}
}

// TestMCPPromptAndReadAnswerForms: helix mcp prompt and read answer a form the
// server asks while serving them, as call does.
func TestMCPPromptAndReadAnswerForms(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	askForm := func(ctx context.Context, ss *sdk.ServerSession) (string, error) {
		res, err := ss.Elicit(ctx, &sdk.ElicitParams{Message: "Sign up", RequestedSchema: signupSchema})
		if err != nil {
			return "", err
		}
		b, _ := json.Marshal(res.Content)
		return res.Action + " " + string(b), nil
	}
	s.AddPrompt(&sdk.Prompt{Name: "greet"}, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		text, err := askForm(ctx, req.Session)
		if err != nil {
			return nil, err
		}
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}}}, nil
	})
	s.AddResource(&sdk.Resource{URI: "test://form", Name: "form"}, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		text, err := askForm(ctx, req.Session)
		if err != nil {
			return nil, err
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "test://form", Text: text}}}, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	want := `accept {"age":30,"name":"Ada","plan":"free"}`
	for _, args := range [][]string{{"prompt", srv.URL, "greet"}, {"read", srv.URL, "test://form"}} {
		code, stdout, stderr := execute(t, append(append([]string{"mcp"}, args...), "--no-input", "--elicit", "name=Ada")...)
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("%s: exit %d\nstdout %q\nstderr %q", args[0], code, stdout, stderr)
		}
	}
}

// TestDevNullIsNoTerminal: a command run with </dev/null has no person at a
// terminal (it must not prompt, nor wait for a browser flow): /dev/null is a
// character device, but no terminal.
func TestDevNullIsNoTerminal(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminalReader(f) {
		t.Fatal("/dev/null taken for a terminal")
	}
}
