package config

import (
	"reflect"
	"strings"
	"testing"
)

// The spec's kebab-case error handler keys (§10.1, §13) still load, as the
// snake_case keys do, with one deprecation warning per key naming its replacement.
func TestFormerKeySpellings(t *testing.T) {
	cfg := func(src string) (*Config, Errors) {
		t.Helper()
		c, errs := load(t, src)
		if errs != nil {
			t.Fatal(errs)
		}
		return c, c.Warnings
	}
	old, warnings := cfg(`
workflows:
  - id: a
    trigger: direct://a
    error-handler:
      dead-letter-channel: log://errors
      default:
        maximum-redeliveries: 3
        redelivery-delay: 10ms
        backoff-multiplier: 2
        maximum-redelivery-delay: 1s
    steps: []
`)
	cur, none := cfg(`
workflows:
  - id: a
    trigger: direct://a
    error_handler:
      dead_letter_channel: log://errors
      default:
        maximum_redeliveries: 3
        redelivery_delay: 10ms
        backoff_multiplier: 2
        maximum_redelivery_delay: 1s
    steps: []
`)
	if len(none) != 0 {
		t.Errorf("snake_case keys warn: %v", none)
	}
	a, b := *old.Workflows[0].ErrorHandler, *cur.Workflows[0].ErrorHandler
	a.Pos, b.Pos, a.Default.Pos, b.Default.Pos = Pos{}, Pos{}, Pos{}, Pos{}
	if !reflect.DeepEqual(*a.Default, *b.Default) || a.DeadLetterChannel != b.DeadLetterChannel || a.Default.MaximumRedeliveryDelay == 0 {
		t.Errorf("former spelling decodes as %+v %+v, current as %+v %+v", a, *a.Default, b, *b.Default)
	}
	// The spellings the spec's own examples write (error-handler, dead-letter-channel,
	// maximum-redeliveries) load silently; the other former spellings warn.
	want := []string{
		"helix.yaml:9:9: workflows[0].error_handler.default: redelivery-delay is deprecated: write redelivery_delay",
		"helix.yaml:10:9: workflows[0].error_handler.default: backoff-multiplier is deprecated: write backoff_multiplier",
		"helix.yaml:11:9: workflows[0].error_handler.default: maximum-redelivery-delay is deprecated: write maximum_redelivery_delay",
	}
	got := warnings.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("warnings:\n%s\nwant %q", got, w)
		}
	}
	if n := len(warnings); n != len(want) {
		t.Errorf("%d warnings, want one per former key the spec does not write (%d):\n%s", n, len(want), got)
	}
}

func TestFormerAndCurrentSpellingTogether(t *testing.T) {
	for _, src := range []string{`
workflows:
  - id: a
    trigger: direct://a
    error-handler: {dead-letter-channel: log://x}
    error_handler: {dead_letter_channel: log://y}
`, `
workflows:
  - id: a
    trigger: direct://a
    error_handler: {dead_letter_channel: log://y}
    error-handler: {dead-letter-channel: log://x}
`} {
		_, errs := load(t, src)
		if errs == nil || !strings.Contains(errs.Error(), "workflows[0]: error_handler is written twice, once in its former spelling") {
			t.Errorf("errors: %v", errs)
		}
	}
}

// A former spelling is only accepted where its replacement is a key: elsewhere it
// is an unknown key like any other.
func TestFormerKeyOnlyWhereItsReplacementIs(t *testing.T) {
	_, errs := load(t, `
mcps:
  - id: m
    error-handler: {}
`)
	if errs == nil || !strings.Contains(errs.Error(), `unknown key "error-handler" in an mcps entry`) {
		t.Errorf("errors: %v", errs)
	}
	if cur, ok := FormerKey("stop-on-error"); !ok || cur != "stop_on_error" {
		t.Errorf("FormerKey(stop-on-error) = %q, %v", cur, ok)
	}
	if _, ok := FormerKey("api_keys"); ok {
		t.Error("api_keys is not a former spelling")
	}
}
