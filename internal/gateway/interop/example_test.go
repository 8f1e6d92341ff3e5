package interop

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/policy"
	"github.com/arvenza/helix/internal/testtools"
)

// completeExampleEnv are the variables docs/gateway.md's complete example
// reads; a reader sets them before starting it.
var completeExampleEnv = []string{
	"SUPPORT_KEY=support-key-0123456789abcdef",
	"ADMIN_KEY=admin-key-0123456789abcdef",
	"GITHUB_TOKEN=github-token-0123456789",
}

// TestCompleteExampleIsInTheDocs: docs/gateway.md shows
// testdata/complete-example.yaml as it is, so that the checks below are checks
// of what a reader copies.
func TestCompleteExampleIsInTheDocs(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile(filepath.Join("testdata", "complete-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(repoFile(t, "docs/gateway.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(example)+"```\n") {
		t.Error("docs/gateway.md does not show internal/gateway/interop/testdata/complete-example.yaml as a yaml block: copy the file into its \"A complete example\"")
	}
}

// TestCompleteExampleValidates: `helix validate` accepts the complete example
// (two upstreams, two audiences, an argument guard, an audit sink), and
// refuses it with the place named once its guard is broken.
func TestCompleteExampleValidates(t *testing.T) {
	t.Parallel()
	example := filepath.Join("testdata", "complete-example.yaml")
	env := append(completeExampleEnv, "HELIX_DATA_DIR="+t.TempDir())
	if out, code := helixValidate(t, env, example); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("helix validate %s: exit %d\n%s", example, code, out)
	}
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	text := strings.Replace(string(src), "rate: 10/s", "rate: 10/fortnight", 1)
	if err := os.WriteFile(broken, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := helixValidate(t, env, broken); code == 0 || !strings.Contains(out, "broken.yaml:") || !strings.Contains(out, "rate") {
		t.Errorf("a broken rate: exit %d\n%s", code, out)
	}
}

// TestCompleteExampleGuard runs the complete example's policies as the
// gateway does: who may call what, and what its argument guard does to a
// call.
func TestCompleteExampleGuard(t *testing.T) {
	for _, kv := range completeExampleEnv {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("HELIX_DATA_DIR", t.TempDir())
	cfg, err := config.Load(filepath.Join("testdata", "complete-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	servers := cfg.MCPServers()
	if len(servers) != 1 || servers[0].Gateway == nil {
		t.Fatalf("want one gateway server, got %+v", servers)
	}
	gw := servers[0].Gateway
	if len(gw.Upstreams) != 2 || len(gw.Audiences) != 2 || gw.Audit == nil || gw.Audit.Sink == "" {
		t.Fatalf("the complete example has %d upstreams, %d audiences, audit %+v; want 2, 2 and a sink", len(gw.Upstreams), len(gw.Audiences), gw.Audit)
	}
	g, err := policy.New(servers[0].ID, gw.Policies, policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	support := &gateway.Principal{ID: "key#0", Name: "support-desk", Roles: []string{"support"}}
	admin := &gateway.Principal{ID: "key#1", Name: "ops", Roles: []string{"admin"}}
	ctx := context.Background()
	call := func(p *gateway.Principal, name, args string) (*gateway.Call, error) {
		c := &gateway.Call{ID: "c", Server: "gateway", Principal: p, Method: gateway.MethodCallTool, Kind: gateway.KindTool,
			Name: name, Arguments: json.RawMessage(args), Started: time.Now()}
		return c, g.Before(ctx, c)
	}
	c, err := call(support, "github.create_issue", `{"title":"Printer","body":"It jams."}`)
	if err != nil {
		t.Fatalf("support files an issue: %v", err)
	}
	var filed map[string]string
	if err := json.Unmarshal(c.Arguments, &filed); err != nil || filed["body"] != "It jams.\n\nFiled by support-desk" {
		t.Errorf("the guard's rewrite: %s (%v)", c.Arguments, err)
	}
	var refusal *gateway.Refusal
	if _, err := call(support, "github.create_issue", `{"title":"Login","body":"my Password is hunter2"}`); !errors.As(err, &refusal) || refusal.Message != "no passwords in issues" {
		t.Errorf("a password in an issue: %v", err)
	}
	if _, err := call(support, "files.read_file", `{"path":"/srv/shared/a.txt"}`); err == nil {
		t.Error("support may call files.read_file; the example allows it to admins only")
	}
	if g.Visible(ctx, support, gateway.KindTool, "files.read_file") || !g.Visible(ctx, admin, gateway.KindTool, "files.read_file") {
		t.Error("files.* must be listed to admins only")
	}
	if _, err := call(admin, "files.read_file", `{"path":"/srv/shared/a.txt"}`); err != nil {
		t.Errorf("an admin reads a file: %v", err)
	}
}

// helixValidate runs `helix validate file` and returns its output and exit code.
func helixValidate(t *testing.T, env []string, file string) (string, int) {
	t.Helper()
	cmd := exec.Command(testtools.HelixBinary(t), "validate", file)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// TestGatewayExampleTakesItsSettingsFromEnv: examples/gateway.yaml fronts
// UPSTREAM_URL on GATEWAY_PORT, and UPSTREAM_PREFIX, empty by default, keeps
// the upstream's names.
func TestGatewayExampleTakesItsSettingsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env       map[string]string
		url, addr string
		prefix    string
	}{
		{map[string]string{}, "http://127.0.0.1:3001/mcp", "127.0.0.1:3002", ""},
		{map[string]string{"UPSTREAM_URL": "https://mcp.example.com/mcp", "UPSTREAM_PREFIX": "ex.", "GATEWAY_PORT": "4000"},
			"https://mcp.example.com/mcp", "127.0.0.1:4000", "ex."},
	} {
		for _, k := range []string{"UPSTREAM_URL", "UPSTREAM_PREFIX", "GATEWAY_PORT"} {
			t.Setenv(k, tc.env[k])
		}
		cfg, err := config.Load(repoFile(t, "examples/gateway.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		servers := cfg.MCPServers()
		if len(servers) != 1 || servers[0].Gateway == nil || len(servers[0].Gateway.Upstreams) != 1 {
			t.Fatalf("examples/gateway.yaml: want one gateway with one upstream, got %+v", servers)
		}
		up := servers[0].Gateway.Upstreams[0]
		if servers[0].Addr != tc.addr || up.URL != tc.url || up.Prefix == nil || *up.Prefix != tc.prefix {
			t.Errorf("with %v: addr %s, url %s, prefix %v; want %s, %s, %q", tc.env, servers[0].Addr, up.URL, up.Prefix, tc.addr, tc.url, tc.prefix)
		}
	}
}
