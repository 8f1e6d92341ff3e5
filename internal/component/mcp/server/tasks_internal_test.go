package server_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A run that failed in Helix itself (here: its step panicked) gave no answer
// of the tool: its task is failed, with a JSON-RPC internal error and no
// result; a run whose step failed stays completed with isError.
func TestTasksInternalFailureIsFailedWithAnError(t *testing.T) {
	t.Parallel()
	a := startStoreApp(t, t.TempDir(), nil)

	id := createTask(t, a.comp, nil, "panics", nil)
	got := awaitTask(t, a.comp, nil, id, "completed", "failed")
	e, _ := got["error"].(map[string]any)
	if got["status"] != "failed" || e == nil || e["code"] != float64(-32603) {
		t.Fatalf("internal failure as a task: %v", got)
	}
	if msg, _ := e["message"].(string); !strings.Contains(msg, "panic") || !strings.Contains(msg, id) {
		t.Fatalf("error message %q", msg)
	}
	if _, ok := got["result"]; ok {
		t.Fatalf("a failed task carries a result: %v", got)
	}

	id = createTask(t, a.comp, nil, "failing", nil)
	got = awaitTask(t, a.comp, nil, id, "completed", "failed")
	inner, _ := got["result"].(map[string]any)
	if got["status"] != "completed" || inner["isError"] != true || got["error"] != nil || !strings.Contains(taskText(t, got), "the job broke") {
		t.Fatalf("tool error as a task: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if run, err := a.rt.Get(ctx, id); err != nil || run.Internal {
		t.Fatalf("tool error run %+v, %v", run, err)
	}
}
