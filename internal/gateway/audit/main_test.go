package audit

import (
	"testing"

	"go.uber.org/goleak"
)

// Close stops the writer and the sink's clients: no goroutine outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
