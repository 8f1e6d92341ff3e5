package interop

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

// inspector runs the MCP Inspector CLI with args and returns its stdout and
// exit code (it exits non-zero for a tool's error result, which some checks
// want).
func inspector(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testtools.Node(t), append([]string{testtools.NPMBin(t, "inspector"), "--cli"}, args...)...)
	// The inspector keeps a catalog under $HOME; keep it out of the real home.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NO_COLOR=1")
	var stdout, stderr testtools.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("inspector %v: %v\n%s", args, ctx.Err(), stderr.String())
	case errors.As(err, &exit):
		return stdout.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("inspector %v: %v", args, err)
	}
	return stdout.String(), 0
}

// inspectorOps are the Inspector CLI's methods, each with the arguments that
// fit server-everything (and the go-sdk server), what its output must contain
// and its exit code.
var inspectorOps = []struct {
	name string
	args []string
	want string
	exit int
}{
	{"tools/list", []string{"--method", "tools/list"}, `"name":"echo"`, 0},
	{"tools/call text", []string{"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hello gateway"}, `Echo: hello gateway`, 0},
	{"tools/call image", []string{"--method", "tools/call", "--tool-name", "get-tiny-image"}, `"mimeType":"image/png"`, 0},
	{"tools/call structured", []string{"--method", "tools/call", "--tool-name", "get-structured-content", "--tool-arg", "location=New York"}, `"structuredContent":{`, 0},
	{"tools/call error", []string{"--method", "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=one", "b=2"}, `"isError":true`, 5},
	{"resources/list", []string{"--method", "resources/list"}, `demo://resource/static/document/`, 0},
	{"resources/read", []string{"--method", "resources/read", "--uri", "demo://resource/dynamic/text/1"}, `"uri":"demo://resource/dynamic/text/1"`, 0},
	{"resources/templates/list", []string{"--method", "resources/templates/list"}, `demo://resource/dynamic/text/{`, 0},
	{"prompts/list", []string{"--method", "prompts/list"}, `"name":"args-prompt"`, 0},
	{"prompts/get", []string{"--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Paris"}, `Paris`, 0},
	{"logging/setLevel", []string{"--method", "logging/setLevel", "--log-level", "debug"}, `{"result":{}}`, 0},
}

// TestInspectorThroughGateway runs every method of the Inspector CLI straight
// to server-everything over Streamable HTTP and through the gateway, and a
// listing and a call in front of server-everything over stdio and of the
// go-sdk server: the outputs must be equal.
func TestInspectorThroughGateway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the helix binary and Node")
	}
	node := testtools.Node(t)
	everything := testtools.NPMBin(t, "mcp-server-everything")
	_, goURL := startGoUpstream(t)
	everythingURL := startEverythingHTTP(t)
	upstreams := []struct {
		name    string
		direct  []string // how the inspector reaches the upstream itself
		gateway string
		ops     int // how many of inspectorOps to run
	}{
		{"server-everything http", []string{"--transport", "http", "--server-url", everythingURL}, startGateway(t, everythingURL, ""), len(inspectorOps)},
		{"server-everything stdio", []string{"--", node, everything, "stdio"}, stdioEverythingGateway(t, ""), 2},
		{"go-sdk server", []string{"--transport", "http", "--server-url", goURL}, startGateway(t, goURL, ""), 2},
	}
	for _, up := range upstreams {
		for _, op := range inspectorOps[:up.ops] {
			t.Run(up.name+"/"+op.name, func(t *testing.T) {
				t.Parallel()
				// The target goes last: a stdio command after "--".
				direct, directExit := inspector(t, append(append(append([]string{}, op.args...), "--format", "json"), up.direct...)...)
				through, throughExit := inspector(t, append(append([]string{}, op.args...), "--format", "json", "--transport", "http", "--server-url", up.gateway)...)
				direct, through = canonical(op.name, []byte(direct)), canonical(op.name, []byte(through))
				if directExit != op.exit || !strings.Contains(direct, op.want) {
					t.Errorf("straight to the upstream: exit %d, want %d; output lacks %s:\n%s", directExit, op.exit, op.want, direct)
				}
				label := "inspector|2025-11-25|" + up.name
				reason, known := knownDifference(label, op.name)
				same := throughExit == directExit && through == direct
				switch {
				case !same && known:
					t.Logf("differs through the gateway, as known: %s", reason)
				case same && known:
					t.Errorf("comes out the same through the gateway now: take it out of knownDifferences (%s) and docs/gateway.md", reason)
				case !same:
					t.Errorf("through the gateway (exit %d):\n%s\nstraight to the upstream (exit %d):\n%s", throughExit, through, directExit, direct)
				}
			})
		}
	}
}
