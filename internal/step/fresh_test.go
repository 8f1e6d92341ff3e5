package step_test

import (
	"testing"

	_ "github.com/arvenza/helix/internal/component/all" // the modules whose traits are read
)

// A workflow whose trigger starts fresh exchanges (the module says so) cannot see
// the variables another workflow's enrich steps set: a script reading one is an
// error. A trigger that may carry another workflow's exchange (direct://, tool://)
// can.
func TestFreshTriggersDoNotSeeOtherWorkflowsVariables(t *testing.T) {
	for trigger, fresh := range map[string]bool{
		"http-server://0.0.0.0:1/x":                 true,
		"timer://tick":                              true,
		"file:///tmp/in":                            true,
		"kafka://orders":                            true,
		"postgres://db:5432/orders?channel=created": true,
		"mcp-server://0.0.0.0:1/mcp":                true,
		"direct://callee":                           false,
		"tool://callee":                             false,
	} {
		src := `workflows:
  - id: callee
    trigger: ` + trigger + `
    steps:
      - transform: {starlang: 'accountId'}
  - id: caller
    trigger: direct://caller
    steps:
      - enrich: {starlang: 'accountId = 1'}
`
		errs := buildAll(t, src)
		if fresh && len(errs) != 1 {
			t.Errorf("%s starts fresh exchanges, so accountId is undefined: got %v", trigger, errs)
		}
		if !fresh && len(errs) != 0 {
			t.Errorf("%s may run on the caller's exchange: %v", trigger, errs)
		}
	}
}
