package app_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
)

// Conversation memory is per caller: a client with another API key that sends the
// same session_id starts a conversation of its own instead of reading the first
// client's; the first client's session continues.
func TestAgentSessionsAreScopedToTheCaller(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string // the user messages of each request, joined
	fake := agenttest.NewOpenAIFunc(t, func(r agenttest.Request) agenttest.Reply {
		var users []string
		for _, m := range r.Body["messages"].([]any) {
			if mm := m.(map[string]any); mm["role"] == "user" {
				users = append(users, mm["content"].(string))
			}
		}
		mu.Lock()
		seen = append(seen, strings.Join(users, " | "))
		mu.Unlock()
		return agenttest.Reply{Text: "noted"}
	})
	a := startSecure(t, agentYAML(`agents:
  - id: assistant
    model: {provider: openai, model: m, api_key: k, base_url: FAKE_URL}
mcps:
  - id: tools
    addr: 127.0.0.1:0
    api_keys: [key-alice, key-bob]
`, fake), nil)
	url := serverURL(t, a, "tools") + "/mcp"
	session := func(key string) *sdk.ClientSession {
		cs, err := sdkSession(t, url, http.Header{"Authorization": {"Bearer " + key}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := session("key-alice"), session("key-bob")
	ask := func(cs *sdk.ClientSession, msg string) {
		if text, isErr := call(t, cs, "assistant", map[string]any{"message": msg, "session_id": "s1"}); isErr || text != "noted" {
			t.Fatalf("call: %q isError=%v", text, isErr)
		}
	}
	ask(alice, "my PIN is 1234")
	ask(bob, "what is my PIN?")
	ask(alice, "and again?")
	want := []string{"my PIN is 1234", "what is my PIN?", "my PIN is 1234 | and again?"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("the model saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// An anonymous caller cannot reach an API-key holder's conversation: neither by
// sending the same session_id nor by forging the key the memory used to be stored
// under (server, principal and session id joined with NUL bytes). A session_id
// with control characters is refused with a clear error (400 on HTTP), and the
// model never sees the key holder's messages in an anonymous request.
func TestAgentAnonymousCallerCannotForgeAKeyHoldersSession(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string // the user messages of each request, joined
	fake := agenttest.NewOpenAIFunc(t, func(r agenttest.Request) agenttest.Reply {
		var users []string
		for _, m := range r.Body["messages"].([]any) {
			if mm := m.(map[string]any); mm["role"] == "user" {
				users = append(users, mm["content"].(string))
			}
		}
		mu.Lock()
		seen = append(seen, strings.Join(users, " | "))
		mu.Unlock()
		return agenttest.Reply{Text: "noted"}
	})
	a := startSecure(t, agentYAML(`agents:
  - id: assistant
    trigger: http-server://127.0.0.1:0/chat
    model: {provider: openai, model: m, api_key: k, base_url: FAKE_URL}
mcps:
  - id: tools
    addr: 127.0.0.1:0
    api_keys: [key-alice]
`, fake), nil)
	cs, err := sdkSession(t, serverURL(t, a, "tools")+"/mcp", http.Header{"Authorization": {"Bearer key-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, cs, "assistant", map[string]any{"message": "my PIN is 1234", "session_id": "s1"}); isErr || text != "noted" {
		t.Fatalf("alice: %q isError=%v", text, isErr)
	}
	chat := httpBase(t, a, "127.0.0.1:0") + "/chat"
	// The plain id: a session of the anonymous callers' own.
	if code, got := post(t, chat, `{"message":"what is my PIN?","session_id":"s1"}`); code != 200 || got != "noted" {
		t.Fatalf("anonymous s1: %d %q", code, got)
	}
	// The forged key: refused before the model is called.
	for _, forged := range []string{`tools\u0000key#0\u0000s1`, `\u0000key#0\u0000s1`, `s1\n`, `s1\u007f`} {
		code, got := post(t, chat, `{"message":"what is my PIN?","session_id":"`+forged+`"}`)
		if code != 400 || !strings.Contains(got, "session_id") || !strings.Contains(got, "control character") {
			t.Errorf("anonymous %s: %d %q, want 400 naming session_id and the control character", forged, code, got)
		}
	}
	// Alice's conversation continues untouched by the anonymous turn.
	if text, isErr := call(t, cs, "assistant", map[string]any{"message": "and again?", "session_id": "s1"}); isErr || text != "noted" {
		t.Fatalf("alice again: %q isError=%v", text, isErr)
	}
	want := []string{"my PIN is 1234", "what is my PIN?", "my PIN is 1234 | and again?"}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("the model saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}
