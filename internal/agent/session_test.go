package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
)

// A session_id with control characters (NUL among them), invalid UTF-8 or more
// than MaxSessionIDBytes bytes is refused before the model is called, with an
// error that names session_id, says what is wrong and quotes a short excerpt.
func TestSessionIDIsChecked(t *testing.T) {
	called := false
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		called = true
		return answer("ok"), nil
	})
	a := mustNew(t, agent.Config{ID: "s"}, m, nil)
	for _, tc := range []struct{ id, want string }{
		{"tools\x00key#0\x00s1", `control character U+0000 at byte 5`},
		{"s1\n", `control character U+000A at byte 2`},
		{"s\u0085", `control character U+0085 at byte 1`},
		{"s\xff", "not valid UTF-8"},
		{strings.Repeat("x", agent.MaxSessionIDBytes+1), "257 bytes, more than 256"},
	} {
		_, err := a.Run(context.Background(), agent.Request{Message: "hi", SessionID: tc.id})
		var se *agent.SessionIDError
		if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), "session_id") || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 300 {
			t.Errorf("session %.40q: %v, want a SessionIDError with %q", tc.id, err, tc.want)
		}
	}
	if called {
		t.Fatal("the model was called for a refused session_id")
	}
	for _, ok := range []string{"s1", "user-42/chat 7", "ünïcödé ✓", strings.Repeat("x", agent.MaxSessionIDBytes)} {
		if err := agent.CheckSessionID(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// Memory is keyed by the session's owner and id, not by a string that joins
// them: callers with another owner (another principal, another server, or none)
// never see each other's messages under the same session_id.
func TestSessionsAreKeyedByOwner(t *testing.T) {
	var seen []string
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		var users []string
		for _, msg := range req.Messages {
			if msg.Role == agent.RoleUser {
				users = append(users, msg.Text)
			}
		}
		seen = append(seen, strings.Join(users, " | "))
		return answer("ok"), nil
	})
	a := mustNew(t, agent.Config{ID: "o"}, m, nil)
	alice := agent.SessionOwner{Server: "tools", Principal: "key#0"}
	run := func(owner agent.SessionOwner, msg string) string {
		t.Helper()
		if _, err := a.Run(context.Background(), agent.Request{Message: msg, SessionID: "s1", Owner: owner}); err != nil {
			t.Fatal(err)
		}
		return seen[len(seen)-1]
	}
	run(alice, "secret")
	for _, other := range []agent.SessionOwner{{}, {Server: "tools"}, {Principal: "key#0"}, {Server: "other", Principal: "key#0"}, {Server: "tools", Principal: "key#1"}} {
		if got := run(other, "mine?"); got != "mine?" {
			t.Errorf("owner %+v saw %q", other, got)
		}
	}
	if got := run(alice, "again"); got != "secret | again" {
		t.Errorf("alice saw %q", got)
	}
}

// CheckSessionID accepts exactly the short, printable, UTF-8 ids, and its error
// stays short whatever the id; Excerpt cuts at a character boundary.
func FuzzCheckSessionID(f *testing.F) {
	for _, s := range []string{"s1", "a\x00b", "é\xff", strings.Repeat("ü", 200), "\u2028", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := agent.CheckSessionID(id)
		printable := utf8.ValidString(id) && len(id) <= agent.MaxSessionIDBytes && !strings.ContainsFunc(id, unicode.IsControl)
		if (err == nil) != printable {
			t.Fatalf("%q: %v", id, err)
		}
		if err != nil && (len(err.Error()) > 400 || strings.ContainsFunc(err.Error(), unicode.IsControl)) {
			t.Fatalf("error of %d bytes: %q", len(err.Error()), err)
		}
		ex := agent.Excerpt(id, 10)
		if len(id) <= 10 && ex != id || len(id) > 10 && (!strings.HasPrefix(id, ex[:strings.LastIndex(ex, "…")]) || len(ex) > 10+len("… (99999999 bytes)")) {
			t.Fatalf("Excerpt(%q) = %q", id, ex)
		}
		if utf8.ValidString(id) && !utf8.ValidString(ex) {
			t.Fatalf("Excerpt(%q) = %q is not UTF-8", id, ex)
		}
	})
}
