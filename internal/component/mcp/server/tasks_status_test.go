package server

import (
	"testing"

	"github.com/arvenza/helix/internal/durable"
)

// A task's status on the tasks extension says how the tool ended wherever it
// is shown (a tools/call answered after a fast run ended, tasks/get): a run
// whose step failed is completed (its result has isError), one that failed in
// Helix is failed; 2025-11-25 shows both as failed.
func TestTaskStatusOfAFailedRun(t *testing.T) {
	for _, c := range []struct {
		run         durable.Run
		ext, legacy string
	}{
		{durable.Run{State: durable.StateFailed}, "completed", "failed"},
		{durable.Run{State: durable.StateFailed, Internal: true}, "failed", "failed"},
		{durable.Run{State: durable.StateCompleted}, "completed", "completed"},
		{durable.Run{State: durable.StateWaiting}, "working", "working"},
	} {
		if got := taskFieldsOf(c.run).Status; got != c.ext {
			t.Errorf("%+v: extension status %q, want %q", c.run, got, c.ext)
		}
		if got := legacyTaskOf(c.run).Status; got != c.legacy {
			t.Errorf("%+v: 2025-11-25 status %q, want %q", c.run, got, c.legacy)
		}
	}
}
