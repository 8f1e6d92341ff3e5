package app_test

import (
	"strings"
	"testing"
)

// helix validate reports agent problems with positions: unknown tool ids (with a
// did-you-mean), an agent listing itself, a type that does not match, auth on a
// stdio server, agent:// targets naming no agent, agent:// as a workflow's
// trigger and agent: steps naming no agent — all in one run.
func TestAgentValidationErrors(t *testing.T) {
	t.Parallel()
	errs := loadErrors(t, `workflows:
  - id: lookup-order
    trigger: direct://lookup-order
    steps:
      - log: {message: hi}
  - id: caller
    trigger: direct://caller
    steps:
      - target: agent://asistant
  - id: bad-trigger
    trigger: agent://assistant
    steps:
      - log: {message: hi}
agents:
  - id: assistant
    model: {provider: openai, model: gpt-4o}
    tools:
      - lookup-ordr
      - name: assistant
      - name: lookup-order
        type: tool
      - name: remote
        type: mcp
        mcp_server: {url: "http://localhost:3100"}
        auth: {type: bearer}
  - id: other
    model: {provider: openai, model: gpt-4o}
    tools:
      - name: x
        type: mcp
        mcp_server: {command: npx}
        auth: {type: bearer, token: t}
tools:
  - id: t1
    description: d
    input: {a: {type: string}}
    output: {b: {type: string}}
    steps:
      - agent: asistant
`)
	want := []string{
		`helix.yaml:9:17: workflows[1].steps[0]: agent://asistant: no agent with id "asistant"; did you mean "assistant"?`,
		`helix.yaml:11:14: workflows[2].trigger: agent://assistant: this is the implicit trigger of the agent assistant`,
		`helix.yaml:18:9: agents[0].tools[0]: agent "assistant": tool "lookup-ordr": no workflow, tools: entry, agent or pipeline with this id (did you mean "lookup-order"?)`,
		`helix.yaml:19:9: agents[0].tools[1]: agent "assistant": lists itself as a tool`,
		`helix.yaml:20:9: agents[0].tools[2]: agent "assistant": tool "lookup-order" is a workflow, not a tool`,
		`helix.yaml:25:15: agents[0].tools[3].auth: agent "assistant": type bearer needs token`,
		`helix.yaml:32:15: agents[1].tools[0].auth: agent "other": auth: applies to http and sse MCP servers`,
		`helix.yaml:39:16: tools[0].steps[0]: agent step: no agent with id "asistant" (did you mean "assistant"?)`,
	}
	got := strings.Split(errs.Error(), "\n")
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(want):
			t.Errorf("unexpected error: %s", got[i])
		case i >= len(got):
			t.Errorf("missing error: %s", want[i])
		case !strings.HasPrefix(got[i], want[i]):
			t.Errorf("error %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
}

// An agent's own trigger is checked like a workflow's: a trigger another workflow
// already uses is an error at the agent's trigger.
func TestAgentTriggerIsCheckedLikeAWorkflows(t *testing.T) {
	t.Parallel()
	errs := loadErrors(t, `workflows:
  - id: chat
    trigger: http-server://127.0.0.1:0/chat
    steps:
      - log: {message: hi}
agents:
  - id: assistant
    trigger: http-server://127.0.0.1:0/chat
    model: {provider: openai, model: gpt-4o}
`)
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "helix.yaml:8:14: agents[0].trigger: trigger http-server://127.0.0.1:0/chat is already used by the workflow at helix.yaml:3:14") {
		t.Fatalf("errors: %v", errs)
	}
}
