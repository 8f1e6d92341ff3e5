package step_test

// The schema and docs/steps.md tests cover every step kind of the binary, the
// ones modules define outside this package included.
import _ "github.com/arvenza/helix/internal/step/allsteps"
