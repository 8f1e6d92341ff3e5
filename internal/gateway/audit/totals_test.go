package audit

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/file"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
)

// An auditor counts its own records: a second auditor of the same server name
// in the process (an earlier app, a test beside it) sharing the /metrics
// series does not add to what the console shows for this one.
func TestAuditorTotalsAreItsOwn(t *testing.T) {
	m := NewMetrics()
	dir := t.TempDir()
	hc := engine.NewContext("audit-test")
	hc.AddComponent("file", file.New(nil))
	o := fastOptions(dir)
	o.Metrics = m
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	earlier, err := New(hc, "gw", &config.AuditConfig{Sink: SinkLog}, o)
	if err != nil {
		t.Fatal(err)
	}
	earlier.Record(context.Background(), rec("a", "alice"))
	earlier.Record(context.Background(), rec("b", "alice"))
	closeWithin(t, earlier, 5*time.Second)

	o.DataDir = t.TempDir()
	a, err := New(hc, "gw", &config.AuditConfig{Sink: "file://" + filepath.ToSlash(filepath.Join(dir, "audit.jsonl"))}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, a, 5*time.Second)
	a.Record(context.Background(), rec("c", "alice"))
	testtools.Eventually(t, "the file sink's record counted", func() bool { return a.Totals().Written == 1 })
	if got := a.Totals(); got != (Totals{Written: 1}) {
		t.Errorf("totals of the file auditor = %+v, want 1 written", got)
	}
	if got := m.Totals("gw"); got.Written != 3 {
		t.Errorf("the /metrics series of gw count %d written, want 3 (both auditors)", got.Written)
	}
}
