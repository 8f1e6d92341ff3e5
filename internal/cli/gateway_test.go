package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
)

// startUpstream serves an in-process go-sdk MCP server with two tools and a
// prompt over Streamable HTTP; wrap, when set, stands in front of it.
func startUpstream(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "tickets", Version: "1.0.0"}, nil)
	for _, name := range []string{"create_issue", "close_issue"} {
		sdk.AddTool(srv, &sdk.Tool{Name: name}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{}, nil, nil
		})
	}
	srv.AddPrompt(&sdk.Prompt{Name: "triage"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{}, nil
	})
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "helix.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func readFile(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// upstreamsOf loads file as Helix does and returns the upstreams of its server id.
func upstreamsOf(t *testing.T, file, id string) []config.UpstreamConfig {
	t.Helper()
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("the written file does not load: %v\n%s", err, readFile(t, file))
	}
	for _, s := range cfg.MCPServers() {
		if s.ID == id && s.Gateway != nil {
			return s.Gateway.Upstreams
		}
	}
	t.Fatalf("no gateway server %q in\n%s", id, readFile(t, file))
	return nil
}

// withoutLines returns text without the lines [from, from+n) (1-based from).
func withoutLines(text string, from, n int) string {
	lines := strings.Split(text, "\n")
	return strings.Join(append(lines[:from-1:from-1], lines[from-1+n:]...), "\n")
}

func TestGatewayAddAppendsToTheGatewayKeepingTheFile(t *testing.T) {
	t.Parallel()
	url := startUpstream(t, nil)
	before := `# The team's gateway.
helix:
  management: {enabled: false}   # not needed here

mcps:
  - id: tools            # Helix's own tools
    addr: "127.0.0.1:0"
  - id: gw
    addr: "127.0.0.1:0"
    upstreams:
      # the search service, read-only
      - id: search
        url: http://search.internal:3100/mcp
        include: [find_*]
    # who may call what
    policies:
      - tools: ["search.*"]
        rate: 10/s

workflows: []   # none yet
`
	file := writeTemp(t, before)
	code, stdout, stderr := execute(t, "gateway", "add", "tickets", url, "--file", file, "--prefix", "t.", "--header", "X-Team=support")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`^tickets: 2 tools, 1 prompt \(protocol \d{4}-\d{2}-\d{2}\)\n`).MatchString(stdout) {
		t.Fatalf("stdout does not say what was found:\n%s", stdout)
	}
	wantLines := []string{
		"      - id: tickets",
		"        url: " + url,
		"        headers:",
		"          X-Team: support",
		`        prefix: "t."`,
	}
	if !strings.Contains(stdout, "Added to mcps[1] (gw) in "+file+", line 15:\n"+strings.Join(wantLines, "\n")+"\n") {
		t.Fatalf("stdout does not show the lines written:\n%s", stdout)
	}
	after := readFile(t, file)
	if got := withoutLines(after, 15, len(wantLines)); got != before {
		t.Fatalf("the rest of the file changed:\n%s", after)
	}
	ups := upstreamsOf(t, file, "gw")
	if len(ups) != 2 || ups[1].ID != "tickets" || ups[1].URL != url || ups[1].Prefix == nil || *ups[1].Prefix != "t." || ups[1].Headers["X-Team"] != "support" {
		t.Fatalf("upstreams as loaded: %+v", ups)
	}
	if code, out, errOut := execute(t, "validate", file); code != ExitOK {
		t.Fatalf("helix validate: exit %d %s %s", code, out, errOut)
	}

	// The same name again is refused before anything is contacted.
	code, _, stderr = execute(t, "gateway", "add", "tickets", "http://127.0.0.1:1/mcp", "--file", file)
	if code != ExitConfig || !strings.Contains(stderr, `already has an upstream "tickets" in mcps[1]`) {
		t.Fatalf("duplicate: exit %d stderr %q", code, stderr)
	}
	if readFile(t, file) != after {
		t.Fatal("a refused add changed the file")
	}
}

func TestGatewayAddCreatesTheGatewayEntry(t *testing.T) {
	t.Parallel()
	url := startUpstream(t, nil)
	cases := []struct {
		name, before, want string
	}{
		{"no file", "", "mcps:\n  - id: gateway\n    upstreams:\n      - id: tickets\n        url: " + url + "\n"},
		{"no mcps key", "helix:\n  management: {enabled: false}\n# end\n",
			"helix:\n  management: {enabled: false}\n# end\n\nmcps:\n  - id: gateway\n    upstreams:\n      - id: tickets\n        url: " + url + "\n"},
		{"an mcps list without a gateway, unindented, no final line end", "mcps:\n- id: tools\n  addr: \"127.0.0.1:0\"",
			"mcps:\n- id: tools\n  addr: \"127.0.0.1:0\"\n- id: gateway\n  upstreams:\n    - id: tickets\n      url: " + url + "\n"},
		{"an entry called gateway", "mcps:\n  - id: gateway\n    addr: \"127.0.0.1:0\"\n",
			"mcps:\n  - id: gateway\n    addr: \"127.0.0.1:0\"\n    upstreams:\n      - id: tickets\n        url: " + url + "\n"},
		{"an empty upstreams key", "mcps:\n  - id: gw   # the gateway\n    upstreams:   # none yet\n    addr: \"127.0.0.1:0\"\n",
			"mcps:\n  - id: gw   # the gateway\n    upstreams:   # none yet\n      - id: tickets\n        url: " + url + "\n    addr: \"127.0.0.1:0\"\n"},
		{"an empty mcps key", "mcps:\nworkflows: []\n", "mcps:\n  - id: gateway\n    upstreams:\n      - id: tickets\n        url: " + url + "\nworkflows: []\n"},
		{"windows line ends", "mcps:\r\n  - id: gateway # here\r\n", "mcps:\r\n  - id: gateway # here\r\n    upstreams:\r\n      - id: tickets\r\n        url: " + url + "\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "helix.yaml")
			if tc.name != "no file" {
				file = writeTemp(t, tc.before)
			}
			code, stdout, stderr := execute(t, "gateway", "add", "tickets", url, "--file", file)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if got := readFile(t, file); got != tc.want {
				t.Fatalf("file:\n%q\nwant\n%q", got, tc.want)
			}
			if code, out, errOut := execute(t, "validate", file); code != ExitOK {
				t.Fatalf("helix validate: exit %d %s %s", code, out, errOut)
			}
		})
	}
}

func TestGatewayAddPicksTheServer(t *testing.T) {
	t.Parallel()
	url := startUpstream(t, nil)
	two := `helix:
  mcp:
    servers:
      - id: inner
        enabled: true
        addr: "127.0.0.1:0"
        upstreams:
          - {id: a, url: "http://a.internal/mcp"}
mcps:
  - id: outer
    addr: "127.0.0.1:0"
    upstreams:
      - id: b
        url: http://b.internal/mcp
`
	file := writeTemp(t, two)
	code, _, stderr := execute(t, "gateway", "add", "tickets", url, "--file", file)
	if code != ExitConfig || !strings.Contains(stderr, "has 2 servers with upstreams: (inner, outer): pick one with --server ID") {
		t.Fatalf("two gateways: exit %d stderr %q", code, stderr)
	}
	code, _, stderr = execute(t, "gateway", "add", "tickets", url, "--file", file, "--server", "nope")
	if code != ExitConfig || !strings.Contains(stderr, `no MCP server entry with id "nope" (it has inner, outer)`) {
		t.Fatalf("unknown server: exit %d stderr %q", code, stderr)
	}
	code, stdout, stderr := execute(t, "gateway", "add", "tickets", url, "--file", file, "--server", "inner")
	if code != ExitOK {
		t.Fatalf("exit %d %s %s", code, stdout, stderr)
	}
	if ups := upstreamsOf(t, file, "inner"); len(ups) != 2 || ups[1].ID != "tickets" {
		t.Fatalf("inner's upstreams: %+v", ups)
	}
	if !strings.Contains(readFile(t, file), "          - {id: a, url: \"http://a.internal/mcp\"}\n          - id: tickets\n") {
		t.Fatalf("not appended after a:\n%s", readFile(t, file))
	}
}

func TestGatewayAddWithBearerEnvWritesTheVariableNotTheToken(t *testing.T) {
	const token = "s3cret-upstream-token-value"
	t.Setenv("HELIX_TEST_UPSTREAM_TOKEN", token)
	url := startUpstream(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				w.Header().Set("WWW-Authenticate", `Bearer realm="tickets"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	file := writeTemp(t, "mcps:\n  - id: gateway\n")

	code, _, stderr := execute(t, "gateway", "add", "tickets", url, "--file", file, "--timeout", "5s")
	if code != ExitRuntime || !strings.Contains(stderr, "add --bearer-env VAR") {
		t.Fatalf("without a token: exit %d stderr %q", code, stderr)
	}

	code, stdout, stderr := execute(t, "gateway", "add", "tickets", url, "--file", file, "--bearer-env", "HELIX_TEST_UPSTREAM_TOKEN")
	if code != ExitOK {
		t.Fatalf("exit %d %s %s", code, stdout, stderr)
	}
	text := readFile(t, file)
	if strings.Contains(text, token) || strings.Contains(stdout, token) || strings.Contains(stderr, token) {
		t.Fatalf("the token was written or printed:\n%s\n%s", text, stdout)
	}
	if !strings.Contains(text, `auth: { type: bearer, token: "${env:HELIX_TEST_UPSTREAM_TOKEN}" }`) {
		t.Fatalf("no auth: block naming the variable:\n%s", text)
	}
	if code, out, errOut := execute(t, "validate", file); code != ExitOK {
		t.Fatalf("helix validate: exit %d %s %s", code, out, errOut)
	}

	code, _, stderr = execute(t, "gateway", "add", "other", url, "--file", file, "--bearer-env", "HELIX_TEST_UNSET_VARIABLE")
	if code != ExitConfig || !strings.Contains(stderr, "--bearer-env HELIX_TEST_UNSET_VARIABLE: the variable is not set") {
		t.Fatalf("unset variable: exit %d stderr %q", code, stderr)
	}
}

func TestGatewayAddErrors(t *testing.T) {
	t.Parallel()
	notMCP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.NotFound(w, nil)
	}))
	t.Cleanup(notMCP.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	url := startUpstream(t, nil)
	cases := []struct {
		name string
		file string // YAML; "" leaves the file out
		args []string
		code int
		want string
	}{
		{"unreachable", "", []string{"x", closed.URL + "/mcp", "--timeout", "5s"}, ExitRuntime, "hint: is the server running at " + closed.URL + "/mcp?"},
		{"not an MCP server", "", []string{"x", notMCP.URL + "/mcp", "--timeout", "5s"}, ExitRuntime, "but not as an MCP server: check the URL's path"},
		{"host:port", "", []string{"x", "localhost:3000"}, ExitConfig, "give the server's full http:// or https:// URL"},
		{"no URL", "", []string{"x"}, ExitConfig, "usage: helix gateway add NAME URL"},
		{"bad name", "", []string{"a.b", url}, ExitConfig, `NAME "a.b": use a letter`},
		{"URL and command", "", []string{"x", url, "--command", "srv"}, ExitConfig, "give a URL or --command, not both"},
		{"header with a secret", "", []string{"x", url, "--header", "Authorization=Bearer abc"}, ExitConfig, "use --bearer-env VAR"},
		{"bad header", "", []string{"x", url, "--header", "novalue"}, ExitConfig, `--header "novalue": use Name=value`},
		{"bad transport", "", []string{"x", url, "--transport", "grpc"}, ExitConfig, `--transport "grpc"`},
		{"not YAML", "mcps: [\n", []string{"x", closed.URL + "/mcp"}, ExitConfig, "is not valid YAML"},
		{"flow upstreams, found before connecting", "mcps:\n  - id: gw\n    upstreams: []\n", []string{"x", closed.URL + "/mcp"}, ExitConfig, "upstreams: of mcps[0] is not a block list"},
		{"stdio transport with a URL", "", []string{"x", url, "--transport", "stdio"}, ExitConfig, "give the command to start with --command"},
		{"two documents", "mcps: []\n---\nworkflows: []\n", []string{"x", closed.URL + "/mcp"}, ExitConfig, "more than one YAML document"},
		{"a list document", "- a\n", []string{"x", url}, ExitConfig, "the document is not a mapping"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "helix.yaml")
			if tc.file != "" {
				file = writeTemp(t, tc.file)
			}
			code, _, stderr := execute(t, append([]string{"gateway", "add", "--file", file}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d (want %d) stderr %q, want it to contain %q", code, tc.code, stderr, tc.want)
			}
			if tc.file == "" {
				if _, err := os.Stat(file); err == nil {
					t.Fatal("a failed add wrote the file")
				}
			} else if readFile(t, file) != tc.file {
				t.Fatal("a failed add changed the file")
			}
		})
	}
}

func TestGatewayAddStdio(t *testing.T) {
	t.Parallel()
	node := testtools.Node(t)
	script := testtools.NPMBin(t, "mcp-server-everything")
	file := writeTemp(t, "mcps:\n  - id: gateway\n")
	code, stdout, stderr := execute(t, "gateway", "add", "everything", "--file", file, "--prefix", "", "--command", node+" '"+script+"' stdio")
	if code != ExitOK {
		t.Fatalf("exit %d %s %s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`^everything: \d+ tools, \d+ prompts, \d+ resources`).MatchString(stdout) {
		t.Fatalf("stdout: %s", stdout)
	}
	ups := upstreamsOf(t, file, "gateway")
	if len(ups) != 1 || ups[0].Command != node || len(ups[0].Args) != 2 || ups[0].Args[0] != script || ups[0].Prefix == nil || *ups[0].Prefix != "" {
		t.Fatalf("upstreams as loaded: %+v", ups)
	}
}

func TestGatewayAddKeepsASymlinkedFileLinked(t *testing.T) {
	t.Parallel()
	url := startUpstream(t, nil)
	dir := t.TempDir()
	real := filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(real, []byte("mcps:\n  - id: gateway\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "helix.yaml")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if code, out, errOut := execute(t, "gateway", "add", "tickets", url, "--file", link); code != ExitOK {
		t.Fatalf("exit %d %s %s", code, out, errOut)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("helix.yaml is no longer a link: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(real); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("real.yaml's mode: %v %v", fi.Mode(), err)
	}
	if !strings.Contains(readFile(t, real), "- id: tickets") {
		t.Fatalf("the linked file was not edited:\n%s", readFile(t, real))
	}
}

func TestGatewayAddSSE(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "legacy", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "ping"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	file := writeTemp(t, "mcps:\n  - id: gateway\n")
	code, stdout, stderr := execute(t, "gateway", "add", "legacy", hs.URL+"/sse", "--transport", "sse", "--file", file)
	if code != ExitOK || !strings.HasPrefix(stdout, "legacy: 1 tool (protocol ") {
		t.Fatalf("exit %d %s %s", code, stdout, stderr)
	}
	ups := upstreamsOf(t, file, "gateway")
	if len(ups) != 1 || ups[0].Transport != "sse" || ups[0].URL != hs.URL+"/sse" {
		t.Fatalf("upstreams as loaded: %+v", ups)
	}
}

// checkAdded is the last guard before the file is written: it refuses a result
// that is not the old file plus the one upstream.
func TestGatewayAddChecksItsOwnEdit(t *testing.T) {
	t.Parallel()
	before := "mcps:\n  - id: gw\n    addr: a\n    upstreams:\n      - id: old\n"
	edit, err := parseYAMLEdit("f.yaml", []byte(before))
	if err != nil {
		t.Fatal(err)
	}
	entry, err := edit.pickServer("")
	if err != nil || entry == nil {
		t.Fatal(entry, err)
	}
	for after, want := range map[string]string{
		"mcps:\n  - id: gw\n    addr: a\n    upstreams:\n      - id: old\n      - id: new\n":        "",
		"mcps:\n  - id: gw\n    addr: CHANGED\n    upstreams:\n      - id: old\n      - id: new\n":  "other values changed",
		"mcps:\n  - id: gw\n    addr: a\n    upstreams:\n      - id: old\n":                         "the last upstream is not new",
		"mcps:\n  - id: gw\n    addr: a\n    upstreams:\n      - id: old\n    - id: new\n":          "the result is not YAML",
		"mcps:\n  - id: gw\n    addr: a\n    upstreams:\n      - id: old\n      - id: new\n  - x\n": "other values changed",
	} {
		err := checkAdded([]byte(before), []byte(after), entry, "new")
		if (want == "" && err != nil) || (want != "" && (err == nil || !strings.Contains(err.Error(), want))) {
			t.Errorf("after\n%s: err = %v, want %q", after, err, want)
		}
	}
}
