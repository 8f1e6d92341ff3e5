// Package report carries a [Reporter] through an exchange's context.Context, so
// that whatever works on the exchange (Starlang's progress and log builtins, steps,
// agents, ingest) can tell the caller how far it is and what it is doing while the
// exchange is still running. The component that received the exchange decides what
// reports become: the MCP server turns them into notifications/progress and
// notifications/message for the client that called the tool.
//
// A context without a reporter is the normal case and costs one context lookup:
// [Progress] and [Log] do nothing then. Sub-workflows (direct://) and the branches
// of multicast and split run with contexts derived from the caller's, so they report
// through the same reporter. Work that outlives the caller on purpose (a wiretap
// tap) runs on the engine's own context and reports nothing.
//
// The package imports nothing but the standard library: no protocol lives here.
package report

import (
	"context"
	"fmt"
	"strings"
)

// Reporter receives the progress and log messages of one piece of work (typically
// one tool call). Its methods are called from the goroutines the work runs on,
// several at once when branches run in parallel, so implementations must be safe
// for concurrent use. They must not block for long: a slow caller should lose
// reports rather than slow the work down. Reports after the work has finished may
// still arrive (from a branch abandoned at a timeout) and should be dropped.
type Reporter interface {
	// Progress reports that current units of total are done; total is 0 when the
	// total is unknown. message may be "".
	Progress(ctx context.Context, current, total float64, message string)
	// Log reports a message for the caller. logger names the source and may be "";
	// data is a string or a JSON-like value (maps, lists, numbers …).
	Log(ctx context.Context, level Level, logger string, data any)
}

type reporterKey struct{}

// WithReporter returns a context that carries r, for the work that runs with it.
// A nil r returns ctx unchanged, so a component can always call it.
func WithReporter(ctx context.Context, r Reporter) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, reporterKey{}, r)
}

// FromContext returns the reporter ctx carries, or nil.
func FromContext(ctx context.Context) Reporter {
	if ctx == nil {
		return nil
	}
	r, _ := ctx.Value(reporterKey{}).(Reporter)
	return r
}

// Progress reports progress to ctx's reporter, if any; see [Reporter.Progress].
func Progress(ctx context.Context, current, total float64, message string) {
	if r := FromContext(ctx); r != nil {
		r.Progress(ctx, current, total, message)
	}
}

// Log reports a message to ctx's reporter, if any; see [Reporter.Log].
func Log(ctx context.Context, level Level, logger string, data any) {
	if r := FromContext(ctx); r != nil {
		r.Log(ctx, level, logger, data)
	}
}

// ProgressWanted reports whether progress reported with ctx can reach anyone:
// false without a reporter, or when the reporter has a method WantsProgress() bool
// that says its caller asked for none (an MCP client that sent no progress token).
// Work that has to prepare its progress reports checks it first: an mcp:// call
// asks its server for progress notifications only when they can be passed on.
func ProgressWanted(ctx context.Context) bool {
	r := FromContext(ctx)
	if r == nil {
		return false
	}
	if w, ok := r.(interface{ WantsProgress() bool }); ok {
		return w.WantsProgress()
	}
	return true
}

// Level is the severity of a message for the caller. The levels are the syslog
// severities (RFC 5424) that MCP's logging uses, from least to most severe.
type Level int8

const (
	LevelDebug Level = iota
	LevelInfo
	LevelNotice
	LevelWarning
	LevelError
	LevelCritical
	LevelAlert
	LevelEmergency
)

var levelNames = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// String returns the level's name as MCP spells it: "debug" … "emergency".
func (l Level) String() string {
	if l >= LevelDebug && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// ParseLevel reads a level name, ignoring case; "warn" is accepted for "warning"
// (as slog and Helix's log step spell it).
func ParseLevel(name string) (Level, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "warn" {
		return LevelWarning, nil
	}
	for i, s := range levelNames {
		if s == n {
			return Level(i), nil
		}
	}
	return LevelInfo, fmt.Errorf("unknown log level %q: use one of %s (or warn)", name, strings.Join(levelNames[:], ", "))
}

// Func adapts two functions to a [Reporter]; a nil function drops those reports.
// Tests and small integrations use it.
type Func struct {
	OnProgress func(ctx context.Context, current, total float64, message string)
	OnLog      func(ctx context.Context, level Level, logger string, data any)
}

var _ Reporter = Func{}

// Progress calls OnProgress, if set.
func (f Func) Progress(ctx context.Context, current, total float64, message string) {
	if f.OnProgress != nil {
		f.OnProgress(ctx, current, total, message)
	}
}

// Log calls OnLog, if set.
func (f Func) Log(ctx context.Context, level Level, logger string, data any) {
	if f.OnLog != nil {
		f.OnLog(ctx, level, logger, data)
	}
}
