package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/component/mcp/client/oauth"
	"github.com/arvenza/helix/internal/component/mcp/client/oauth/oauthtest"
)

// TestMCPLoginCallLogout logs in with a browser command (curl following the
// authorization server's redirect to the loopback listener, as the conformance
// script does), lists the login, calls a tool with the stored token and logs out.
func TestMCPLoginCallLogout(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is needed as the browser command")
	}
	dir := filepath.Join(t.TempDir(), "tokens")
	t.Setenv(oauth.DirEnv, dir)
	t.Setenv("BROWSER", curl+" -fsS -o /dev/null -L")
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)

	code, _, stderr := execute(t, "mcp", "login", rs.Endpoint(), "--timeout", "20s", "--scope", "admin")
	if code != 0 || !strings.Contains(stderr, "Logged in to "+rs.Endpoint()) || !strings.Contains(stderr, as.URL+"/authorize?") {
		t.Fatalf("login: exit %d\n%s", code, stderr)
	}
	if got := as.AuthRequests()[0].Get("scope"); !strings.Contains(got, "admin") || !strings.Contains(got, "read") {
		t.Errorf("login asked for %q, want the server's read and --scope admin", got)
	}
	l, err := oauth.Store{Dir: dir}.Load(rs.Endpoint())
	if err != nil || l == nil {
		t.Fatalf("stored login: %v", err)
	}

	code, stdout, _ := execute(t, "mcp", "logins")
	if code != 0 || !strings.Contains(stdout, rs.Endpoint()) || strings.Contains(stdout, l.Token.AccessToken) || strings.Contains(stdout, l.Token.RefreshToken) {
		t.Errorf("logins: exit %d\n%s", code, stdout)
	}

	// host:port finds the login of its /mcp endpoint.
	code, stdout, stderr = execute(t, "mcp", "call", strings.TrimPrefix(rs.URL, "http://"), "whoami")
	if code != 0 || stdout != "authorized\n" || len(as.AuthRequests()) != 1 {
		t.Fatalf("call with the stored login: exit %d, %q, %s (authorizations %d)", code, stdout, stderr, len(as.AuthRequests()))
	}

	code, _, stderr = execute(t, "mcp", "logout", rs.Endpoint())
	if code != 0 || !strings.Contains(stderr, "tokens revoked at "+as.URL+"/revoke") {
		t.Fatalf("logout: exit %d\n%s", code, stderr)
	}
	if len(as.Revoked()) != 2 {
		t.Errorf("revoked %v, want the refresh and the access token", as.Revoked())
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) != 0 {
		t.Errorf("files left after logout: %v", files)
	}

	// Without a login and without a way to reach a person, the error says what to run.
	if isTerminal(os.Stdin) {
		return // a person is at the terminal: the flow would run
	}
	t.Setenv("BROWSER", "")
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	code, _, stderr = execute(t, "mcp", "call", rs.Endpoint(), "whoami")
	if code != ExitRuntime || !strings.Contains(stderr, "run `helix mcp login "+rs.Endpoint()+"`") {
		t.Errorf("call without a login: exit %d\n%s", code, stderr)
	}
}

func TestMCPLoginUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "login"}, "usage: helix mcp login URL"},
		{[]string{"mcp", "login", "ftp://x/y"}, "use host:port or an http:// or https:// URL"},
		{[]string{"mcp", "login", "http://127.0.0.1:1/mcp", "--client-secret", "s"}, "needs --client-id"},
		{[]string{"mcp", "login", "http://127.0.0.1:1/mcp", "--list"}, "--list takes no URL"},
	} {
		code, _, stderr := execute(t, tc.args...)
		if code != ExitConfig || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}
