package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/audit"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
)

// auditWritten reads the count of written audit records of server from the
// management listener's /metrics (the series the console's MCP page reads).
func auditWritten(t *testing.T, a *app.App, server string) string {
	t.Helper()
	resp, err := http.Get("http://" + a.ManagementAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`helix_gateway_audit_records_written_total\{server="` + server + `",sink="([a-z]+)"\} (\d+)`).FindStringSubmatch(string(b))
	if m == nil {
		return ""
	}
	return m[1] + " " + m[2]
}

// A gateway audited to a file: the call's record lands in the file and the
// console's MCP page counts it "1 written", though an earlier auditor of the
// same server name in the process (an app a reload replaced) counted records
// in the process-wide /metrics series.
func TestGatewayFileAuditSinkCountsWritten(t *testing.T) {
	t.Parallel()
	earlier, err := audit.New(nil, "gwfile", &config.AuditConfig{Sink: audit.SinkLog}, audit.Options{DataDir: t.TempDir(),
		Metrics: app.AuditMetrics, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	earlier.Record(context.Background(), &gateway.Record{ID: "e1", Method: gateway.MethodCallTool, Name: "t", Outcome: gateway.OutcomeOK})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := earlier.Close(ctx); err != nil {
		t.Fatal(err)
	}
	url, _ := upstreamWithToken(t, "up-secret")
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
workflows:
  - id: greet
    trigger: direct://greet
    steps: []
mcps:
  - id: gwfile
    addr: "127.0.0.1:0"
    api_keys:
      - { key: alice-key-0123456789, name: alice }
    upstreams:
      - id: up
        url: `+url+`
        headers: { X-Team: support }
        auth: { type: bearer, token: up-secret }
    audit: { sink: "file://`+filepath.ToSlash(path)+`" }
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Helix.DataDir = t.TempDir()
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	alice := bearerSession(t, a, "gwfile", "alice-key-0123456789")
	if text, isErr := callTool(t, alice, "up.echo", map[string]any{"text": "a"}); text != "up:a" || isErr {
		t.Fatalf("alice: %q %v", text, isErr)
	}
	testtools.Eventually(t, "the record in the file", func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), `"principal":"alice"`)
	})
	testtools.Eventually(t, "the record counted in the file sink's /metrics series", func() bool {
		return auditWritten(t, a, "gwfile") == "file 1"
	})
	if got := a.AuditShown("gwfile"); got != 1 {
		t.Errorf("the console's MCP page shows %d written, want 1", got)
	}
}
