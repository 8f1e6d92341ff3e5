package config

import (
	"strings"
	"testing"
	"time"
)

func TestTestsAreDecoded(t *testing.T) {
	cfg, err := LoadBytes("t.yaml", []byte(`
workflows:
  - id: w
    trigger: direct://w
    steps: [{set-body: {constant: hi}}]
tests:
  - name: one
    workflow: w
    timeout: 2s
    input: {body: {a: 1}, headers: {X-A: b}}
    mocks:
      - uri: http://api.example.com/x?b=2&a=1
        delay: 5ms
        reply: {body: [1, 2], headers: {X-R: "1"}}
        expect: {calls: 2, body: {a: 1}}
      - uri: slack://ops
        error: down
    expect: {body_subset: {a: 1}, body_matches: "^h", headers: {X-A: b}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Tests) != 1 {
		t.Fatalf("%d tests", len(cfg.Tests))
	}
	tc := cfg.Tests[0]
	if tc.Name != "one" || tc.Workflow != "w" || tc.Timeout != 2*time.Second || tc.Pos.Line != 7 || tc.WorkflowPos.Line != 8 {
		t.Errorf("case %+v", tc)
	}
	if !tc.Input.HasBody || tc.Input.Headers["X-A"] != "b" {
		t.Errorf("input %+v", tc.Input)
	}
	m := tc.Mocks[0]
	if m.Parsed == nil || m.Parsed.Host != "api.example.com" || m.Delay != 5*time.Millisecond || m.Calls == nil || *m.Calls != 2 ||
		!m.HasReceived || !m.Reply.HasBody || m.Reply.Headers["X-R"] != "1" || m.Path != "tests[0].mocks[0]" {
		t.Errorf("mock %+v", m)
	}
	if e := tc.Mocks[1]; !e.HasError || e.Error != "down" {
		t.Errorf("error mock %+v", e)
	}
	if !tc.Expect.HasBodySubset || tc.Expect.BodyMatches == nil || tc.Expect.HasBody || tc.Expect.HasError {
		t.Errorf("expect %+v", tc.Expect)
	}
}

func TestTestsMistakesArePositioned(t *testing.T) {
	_, err := LoadBytes("t.yaml", []byte(`tests:
  - name: x
    workflow: w
    expect: {error: boom, body: 1}
    mocks:
      - {uri: "http://a", error: e, reply: {body: 1}}
      - {uri: ""}
`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"t.yaml:4:13: tests[0].expect: a test expecting an error cannot also expect a body",
		"t.yaml:6:9: tests[0].mocks[0]: a mock answers with a reply or an error, not both",
		"t.yaml:7:15: tests[0].mocks[1].uri: a mock needs the URI of the target it replaces",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
