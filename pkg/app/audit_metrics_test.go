package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/audit"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/pkg/app"
)

// /metrics shows what the audits of gateway servers did with their records.
func TestAuditMetricsOnTheManagementListener(t *testing.T) {
	t.Parallel()
	au, err := audit.New(nil, "audit-metrics-test", &config.AuditConfig{Sink: audit.SinkLog}, audit.Options{DataDir: t.TempDir(), Metrics: app.AuditMetrics,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	au.Record(context.Background(), &gateway.Record{ID: "1", Method: gateway.MethodCallTool, Name: "t", Outcome: gateway.OutcomeOK})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := au.Close(ctx); err != nil {
		t.Fatal(err)
	}
	a := startSecure(t, `
helix:
  management:
    addr: "127.0.0.1:0"
workflows:
  - id: greet
    trigger: direct://greet
    steps:
      - set-body: "hello"
`, nil)
	resp, body := newRawClient(t).do(http.MethodGet, "http://"+a.ManagementAddr()+management.MetricsPath, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	for _, w := range []string{
		"\nhelix_gateway_audit_records_written_total{server=\"audit-metrics-test\",sink=\"log\"} 1\n",
		"\nhelix_gateway_audit_records_spooled_total{server=\"audit-metrics-test\",sink=\"log\"} 0\n",
		"# TYPE helix_gateway_audit_records_retried_total counter",
	} {
		if !strings.Contains(body, w) {
			t.Errorf("metrics lack %q", w)
		}
	}
}
