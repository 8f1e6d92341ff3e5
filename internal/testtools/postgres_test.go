package testtools

import (
	"strings"
	"testing"
)

// Without a server, PostgreSQL tests skip, and fail under HELIX_REQUIRE_TOOLS=1 (as CI
// runs them): a CI run cannot go green by skipping them.
func TestPostgresURLMissing(t *testing.T) {
	for _, tc := range []struct {
		url, require string
		wantFailed   bool
		wantMsg      string
	}{
		{"", "", false, "is not set"},
		{"", "1", true, "is not set"},
		{"postgres://nobody:pw@127.0.0.1:1/none?connect_timeout=2", "1", true, "does not answer"},
	} {
		t.Setenv(EnvPostgresURL, tc.url)
		t.Setenv(EnvRequireTools, tc.require)
		rec := &recordingTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			PostgresURL(rec)
		}()
		<-done
		if rec.failed != tc.wantFailed || rec.skipped == tc.wantFailed {
			t.Errorf("url=%q require=%q: failed=%v skipped=%v, want failed=%v", tc.url, tc.require, rec.failed, rec.skipped, tc.wantFailed)
		}
		if !strings.Contains(rec.msg, tc.wantMsg) || !strings.Contains(rec.msg, "scripts/postgres.sh start") {
			t.Errorf("message %q lacks %q and the start hint", rec.msg, tc.wantMsg)
		}
		if strings.Contains(rec.msg, "nobody:pw") {
			t.Errorf("message shows the password: %q", rec.msg)
		}
	}
}
