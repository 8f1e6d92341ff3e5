package app_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/pkg/agent/agenttest"
)

// Conversation memory is per caller: a client with another API key that sends the
// same session_id starts a conversation of its own instead of reading the first
// client's; the first client's session continues.
func TestAgentSessionsAreScopedToTheCaller(t *testing.T) {
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
