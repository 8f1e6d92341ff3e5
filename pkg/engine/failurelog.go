package engine

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/exchange"
)

// FailureLogMessage is the message of the line logged for a failed exchange.
const FailureLogMessage = "exchange failed"

// failuresSuppressedMessage is the message of the line that counts the failures
// the rate limit kept out of the log.
const failuresSuppressedMessage = "failed exchanges not logged (rate limit)"

// failureLogLimit bounds how many failed exchanges one workflow logs: a token
// bucket of Burst lines refilled at PerSecond. Failures beyond it are counted, and
// the count is logged SummaryEvery after the first of them (and when the context
// stops), so that a flood of failures cannot fill the disk and none goes unseen.
type failureLogLimit struct {
	PerSecond    float64
	Burst        int
	SummaryEvery time.Duration
}

// defaultFailureLogLimit: 20 lines at once, then one a second, per workflow; the
// suppressed ones are counted in a line every 10 s.
var defaultFailureLogLimit = failureLogLimit{PerSecond: 1, Burst: 20, SummaryEvery: 10 * time.Second}

// setFailureLogLimit replaces the limit; call it before Start. Zero fields take
// their [defaultFailureLogLimit] value.
func (c *Context) setFailureLogLimit(l failureLogLimit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failureLimit = l
	for id, rw := range c.byID {
		rw.failures = newFailureLog(id, c.failureLimitLocked(), c.Logger)
	}
}

// flushFailureLogs logs the suppressed failures not summarised yet; Stop calls it
// once the exchanges have drained.
func (c *Context) flushFailureLogs() {
	c.mu.Lock()
	logs := make([]*failureLog, 0, len(c.byID))
	for _, rw := range c.byID {
		logs = append(logs, rw.failures)
	}
	c.mu.Unlock()
	for _, f := range logs {
		f.flush()
	}
}

// failureLimitLocked is the limit in force, defaults filled in.
func (c *Context) failureLimitLocked() failureLogLimit {
	l := c.failureLimit
	if l.PerSecond <= 0 {
		l.PerSecond = defaultFailureLogLimit.PerSecond
	}
	if l.Burst <= 0 {
		l.Burst = defaultFailureLogLimit.Burst
	}
	if l.SummaryEvery <= 0 {
		l.SummaryEvery = defaultFailureLogLimit.SummaryEvery
	}
	return l
}

// failureLog writes the failure lines of one workflow.
type failureLog struct {
	workflow string
	limiter  *rate.Limiter
	every    time.Duration
	logger   func() *slog.Logger

	mu         sync.Mutex
	suppressed int
	summary    *time.Timer // pending summary of the suppressed failures; nil: none
}

func newFailureLog(workflow string, l failureLogLimit, logger func() *slog.Logger) *failureLog {
	return &failureLog{workflow: workflow, limiter: rate.NewLimiter(rate.Limit(l.PerSecond), l.Burst),
		every: l.SummaryEvery, logger: logger}
}

// failed logs the failure of ex with err, or counts it when over the limit. A
// panic is logged at ERROR (a fault of Helix or of a component), once, every
// other failure at WARN: the workflow reported it, and its caller got an error.
func (f *failureLog) failed(ex *exchange.Exchange, err error) {
	level := slog.LevelWarn
	var pe *PanicError
	if errors.As(err, &pe) {
		if pe.logged.Swap(true) {
			return // logged by the workflow it happened in
		}
		level = slog.LevelError
	}
	if !f.limiter.Allow() {
		f.mu.Lock()
		f.suppressed++
		if f.summary == nil {
			f.summary = time.AfterFunc(f.every, f.flush)
		}
		f.mu.Unlock()
		return
	}
	f.logger().LogAttrs(context.Background(), level, FailureLogMessage,
		slog.String("workflow", f.workflow),
		slog.String("step", stepPath(err)),
		slog.String("exchange", ex.ID()),
		slog.String("error", redact.Text(err.Error())))
}

// flush logs how many failures were suppressed since the last summary.
func (f *failureLog) flush() {
	f.mu.Lock()
	n := f.suppressed
	f.suppressed = 0
	if f.summary != nil {
		f.summary.Stop()
		f.summary = nil
	}
	f.mu.Unlock()
	if n > 0 {
		f.logger().LogAttrs(context.Background(), slog.LevelWarn, failuresSuppressedMessage,
			slog.String("workflow", f.workflow), slog.Int("suppressed", n),
			slog.String("hint", "the log shows at most a few failures a second per workflow; helix_exchanges_failed_total counts every one"))
	}
}

// stepPath names the steps err failed in, outermost first: a step of a workflow
// reached through direct:// follows the step that called it
// ("a.yaml:7:9 to > b.yaml:5:9 process"). "" when no step is named.
func stepPath(err error) string {
	var names []string
	for err != nil {
		var se *StepError
		if !errors.As(err, &se) {
			break
		}
		if se.Step != "" && (len(names) == 0 || names[len(names)-1] != se.Step) {
			names = append(names, se.Step)
		}
		err = se.Err
	}
	return strings.Join(names, " > ")
}
