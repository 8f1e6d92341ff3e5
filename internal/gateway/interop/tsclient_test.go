package interop

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

// tsClient runs testdata/ts-client.mjs (the TypeScript SDK's client) against
// target ("http URL" or "stdio COMMAND ARGS…") and returns its transcript.
func tsClient(t *testing.T, prefix string, target ...string) transcript {
	t.Helper()
	sdkDir := testtools.NPMPackageDir(t, "@modelcontextprotocol/sdk")
	script, err := filepath.Abs(filepath.Join("testdata", "ts-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	esm := "file://" + filepath.ToSlash(filepath.Join(sdkDir, "dist", "esm"))
	out := runNode(t, 3*time.Minute, nil, append([]string{script, esm, prefix}, target...)...)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &raw); err != nil {
		t.Fatalf("ts-client output %q: %v", out, err)
	}
	tr := transcript{}
	for op, v := range raw {
		tr[op] = canonical(op, v)
	}
	return tr
}

// checkTSTranscript holds a transcript to what every upstream of the tests
// answers, so that a run that fails the same way straight and through the
// gateway still fails.
func checkTSTranscript(t *testing.T, tr transcript, label string) {
	t.Helper()
	for op, want := range map[string]string{
		"tools/call text":       `"text":"Echo: hello gateway"`,
		"tools/call image":      `"mimeType":"image/png"`,
		"tools/call structured": `"structuredContent":{`,
		"tools/call error":      `"isError":true`,
		"progress":              `"progress":"steps 1, 2 … in order"`,
		"sampling":              `sampled answer`,
		"elicitation":           `Ada Lovelace`,
		"roots":                 `file:///srv/interop`,
		"logging":               `"received"`,
		"resources/subscribe":   `"updated"`,
		"resources/read":        `"uri":"demo://resource/dynamic/text/1"`,
		"prompts/get args":      `Paris`,
		"completion/complete":   `["Engineering"]`,
		"cancel":                `"aborted"`,
		"ping after cancel":     `{}`,
		"requests":              `{"elicits":1,"samples":1}`,
	} {
		if expected(label, op) && !strings.Contains(tr[op], want) {
			t.Errorf("%s: %s, want it to contain %s", op, tr[op], want)
		}
	}
}

func TestTypeScriptClientThroughGateway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the helix binary and Node")
	}
	node := testtools.Node(t)
	everything := testtools.NPMBin(t, "mcp-server-everything")
	for _, up := range []struct {
		name string
		// start returns how the client reaches the upstream itself, and the
		// gateway in front of it.
		start func(t *testing.T) (direct []string, gateway string)
	}{
		{name: "server-everything stdio", start: func(t *testing.T) ([]string, string) {
			return []string{"stdio", node, everything, "stdio"}, stdioEverythingGateway(t, "")
		}},
		{name: "server-everything http", start: func(t *testing.T) ([]string, string) {
			return []string{"http", startEverythingHTTP(t)}, startGateway(t, startEverythingHTTP(t), "")
		}},
		{name: "go-sdk server", start: func(t *testing.T) ([]string, string) {
			up, url := startGoUpstream(t)
			t.Cleanup(func() {
				if !t.Failed() {
					// The gateway cancelled the upstream's call when the client aborted it.
					waitFor(t, "cancellation of the go-sdk server's call through the gateway", func() bool { return up.cancelledCalls() >= 2 })
				}
			})
			return []string{"http", url}, startGateway(t, url, "")
		}},
	} {
		t.Run(up.name, func(t *testing.T) {
			t.Parallel()
			directTarget, gateway := up.start(t)
			label := "ts|2025-11-25|" + up.name
			direct := tsClient(t, "", directTarget...)
			checkTSTranscript(t, direct, "")
			through := tsClient(t, "", "http", gateway)
			checkTSTranscript(t, through, label)
			compareTranscripts(t, label, direct, through)
		})
	}
}
