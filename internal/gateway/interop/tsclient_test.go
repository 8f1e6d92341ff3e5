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
		tr[op] = createdAt.ReplaceAllString(string(v), "")
	}
	return tr
}

// checkTSTranscript holds a transcript to what every upstream of the tests
// answers, so that a run that fails the same way straight and through the
// gateway still fails.
func checkTSTranscript(t *testing.T, tr transcript) {
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
		"requests":              `{"samples":1,"elicits":1}`,
	} {
		if !strings.Contains(tr[op], want) {
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
	t.Run("server-everything stdio", func(t *testing.T) {
		t.Parallel()
		direct := tsClient(t, "", "stdio", node, everything, "stdio")
		checkTSTranscript(t, direct)
		through := tsClient(t, "", "http", stdioEverythingGateway(t, ""))
		checkTSTranscript(t, through)
		compareTranscripts(t, direct, through)
	})
	t.Run("server-everything http", func(t *testing.T) {
		t.Parallel()
		direct := tsClient(t, "", "http", startEverythingHTTP(t))
		checkTSTranscript(t, direct)
		through := tsClient(t, "", "http", startGateway(t, startEverythingHTTP(t), ""))
		checkTSTranscript(t, through)
		compareTranscripts(t, direct, through)
	})
	t.Run("go-sdk server", func(t *testing.T) {
		t.Parallel()
		up, url := startGoUpstream(t)
		direct := tsClient(t, "", "http", url)
		checkTSTranscript(t, direct)
		through := tsClient(t, "", "http", startGateway(t, url, ""))
		checkTSTranscript(t, through)
		compareTranscripts(t, direct, through)
		testtools.Eventually(t, "the go-sdk server's call to be cancelled through the gateway", func() bool { return up.cancelledCalls() >= 2 })
	})
}
