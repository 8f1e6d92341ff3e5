package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// callTestServer is a go-sdk MCP server over Streamable HTTP with tools covering the
// shapes `helix mcp call` prints.
func callTestServer(t *testing.T) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "call-test", Version: "1.0.0"}, nil)
	type sumIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "sum", Description: "Add a and b\nsecond line"}, func(_ context.Context, _ *sdk.CallToolRequest, in sumIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	s.AddTool(&sdk.Tool{Name: "args", Description: "Echo the arguments as JSON", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "header", Description: "Return the X-Test header", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: req.Extra.Header.Get("X-Test")}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "broken", Description: "Always fails", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestMCPCall(t *testing.T) {
	t.Parallel()
	url := callTestServer(t)
	hostport := strings.TrimPrefix(url, "http://")

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderrHas  string
		stdoutJSON bool
	}{
		{"text result", []string{url, "sum", "a=2", "b=40"}, ExitOK, "42\n", "", false},
		{"host:port", []string{hostport, "sum", "a=1", "b=1"}, ExitOK, "2\n", "", false},
		{"json values and strings", []string{url, "args", `n=2`, `b=true`, `o={"x":1}`, `s=hello`}, ExitOK, `{"b":true,"n":2,"o":{"x":1},"s":"hello"}` + "\n", "", false},
		{"--json merged with pairs", []string{url, "args", "--json", `{"a":1,"b":2}`, "b=3"}, ExitOK, `{"a":1,"b":3}` + "\n", "", false},
		{"header", []string{url, "header", "--header", "X-Test: yes"}, ExitOK, "yes\n", "", false},
		{"tool error", []string{url, "broken"}, ExitRuntime, "", "disk full", false},
		{"unknown tool", []string{url, "nope"}, ExitRuntime, "", "nope", false},
		{"json output", []string{url, "sum", "a=1", "b=2", "-o", "json"}, ExitOK, "", "", true},
		{"list", []string{url, "--list"}, ExitOK, "args                         Echo the arguments as JSON\nbroken                       Always fails\nheader                       Return the X-Test header\nsum                          Add a and b\n", "", false},
		{"unreachable", []string{"127.0.0.1:1", "sum"}, ExitRuntime, "", "connection refused", false},
		{"missing tool", []string{url}, ExitConfig, "", "usage: helix mcp call URL TOOL", false},
		{"bad pair", []string{url, "sum", "a"}, ExitConfig, "", `argument "a": use key=value`, false},
		{"bad --json", []string{url, "sum", "--json", "[1]"}, ExitConfig, "", "--json must be a JSON object", false},
		{"bad transport", []string{url, "sum", "--transport", "grpc"}, ExitConfig, "", "use http or sse", false},
		{"bad header", []string{url, "sum", "--header", "nocolon"}, ExitConfig, "", `use "Name: value"`, false},
		{"bad url", []string{"ftp://x", "sum"}, ExitConfig, "", "use host:port", false},
		{"bad output", []string{url, "sum", "-o", "xml"}, ExitConfig, "", "use text or json", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := execute(t, append([]string{"mcp", "call"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if tc.stdoutJSON {
				var res struct {
					Content []struct{ Type, Text string } `json:"content"`
				}
				if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Content) != 1 || res.Content[0].Text != "3" {
					t.Fatalf("stdout %q is not the JSON result with text 3 (%v)", stdout, err)
				}
			} else if stdout != tc.stdout {
				t.Fatalf("stdout = %q, want %q", stdout, tc.stdout)
			}
			if !strings.Contains(stderr, tc.stderrHas) {
				t.Fatalf("stderr = %q, want it to contain %q", stderr, tc.stderrHas)
			}
		})
	}
}

func TestMCPCallStdio(t *testing.T) {
	t.Parallel()
	node := testtools.Node(t)
	script := testtools.NPMBin(t, "mcp-server-everything")
	code, stdout, stderr := execute(t, "mcp", "call", "--stdio", node+" '"+script+"' stdio", "echo", "message=over stdio")
	if code != ExitOK || stdout != "Echo: over stdio\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	code, _, stderr = execute(t, "mcp", "call", "--stdio", "'unterminated", "echo")
	if code != ExitConfig || !strings.Contains(stderr, "unterminated") {
		t.Fatalf("bad --stdio: exit %d stderr %q", code, stderr)
	}
}

func TestSplitCommandLine(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"npx -y pkg":                 {"npx", "-y", "pkg"},
		`  a   'b c'  "d \"e\""  `:   {"a", "b c", `d "e"`},
		`a\ b c`:                     {"a b", "c"},
		`''`:                         {""},
		`x"y"'z'`:                    {"xyz"},
		"":                           nil,
		"/usr/bin/srv --dsn=a=b":     {"/usr/bin/srv", "--dsn=a=b"},
		"node '/path with/space.js'": {"node", "/path with/space.js"},
	} {
		got, err := splitCommandLine(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitCommandLine(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`'a`, `"a`, `a\`} {
		if _, err := splitCommandLine(bad); err == nil {
			t.Errorf("splitCommandLine(%q): no error", bad)
		}
	}
}

func TestMCPEndpointURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, transport, want string }{
		{"localhost:3000", "http", "http://localhost:3000"},
		{"localhost:3000", "sse", "http://localhost:3000/sse"},
		{"localhost:3000/events", "sse", "http://localhost:3000/events"},
		{"https://h/mcp", "http", "https://h/mcp"},
	} {
		got, err := mcpEndpointURL(tc.raw, tc.transport)
		if err != nil || got != tc.want {
			t.Errorf("mcpEndpointURL(%q, %s) = %q, %v; want %q", tc.raw, tc.transport, got, err, tc.want)
		}
	}
}
