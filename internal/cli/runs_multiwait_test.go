package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/durable"
)

// A run waiting for several things at once: show lists them all; approve and
// reject must say which (--wait), and resolve that one only.
func TestRunsResolveOneOfSeveralWaits(t *testing.T) {
	t.Parallel()
	m := newMemRuns()
	name := durable.Wait{Kind: durable.WaitElicit, Key: "name", Message: "Your name?", Schema: json.RawMessage(`{"type":"object"}`)}
	ok := durable.Wait{Kind: durable.WaitApprove, Key: "ok", Message: "Ship it?"}
	m.runs["m1"] = durable.Run{ID: "m1", State: durable.StateInputRequired, Wait: &name, Waits: []durable.Wait{name, ok}}

	code, out, errs := runRuns(t, m, "runs", "show", "a.yaml", "m1")
	if code != ExitOK || !strings.Contains(out, "wait key   name") || !strings.Contains(out, "wait key   ok") {
		t.Errorf("show: exit %d %q %q", code, out, errs)
	}
	code, _, errs = runRuns(t, m, "runs", "approve", "a.yaml", "m1")
	if code != ExitConfig || !strings.Contains(errs, "run m1 waits for 2 things at once (keys name, ok): say which with --wait KEY") {
		t.Errorf("approve without --wait: exit %d %q", code, errs)
	}
	code, _, errs = runRuns(t, m, "runs", "approve", "a.yaml", "m1", "--wait", "nope")
	if code != ExitRuntime || !strings.Contains(errs, `run m1 waits for nothing with key "nope" (its keys: name, ok)`) {
		t.Errorf("approve an unknown wait: exit %d %q", code, errs)
	}
	if code, _, errs = runRuns(t, m, "runs", "approve", "a.yaml", "m1", "--wait", "ok"); code != ExitOK {
		t.Fatalf("approve one: exit %d %q", code, errs)
	}
	if len(m.resolved) != 1 || m.resolved[0].Kind != durable.ResolvedApproved || m.resolved[0].Key != "ok" {
		t.Errorf("resolved %+v, want the approval of wait ok", m.resolved)
	}
	// One wait: --wait is optional, and a wrong one is refused.
	code, _, errs = runRuns(t, m, "runs", "approve", "a.yaml", "r2", "--wait", "other")
	if code != ExitRuntime || !strings.Contains(errs, `run r2 waits for approve "approve-1", not "other"`) {
		t.Errorf("a wrong --wait: exit %d %q", code, errs)
	}
}
