package starlang

import (
	"fmt"
	"log/slog"
	"math"

	"go.starlark.net/starlark"

	"github.com/arvenza/helix/internal/report"
)

// progress(current, total=None, message=None) reports how far the work is to the
// caller, through the reporter of the evaluation's context (package report); an MCP
// client that asked for progress receives it as notifications/progress. Without a
// reporter it does nothing. Returns None.
func builtinProgress(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var current, total, message starlark.Value = nil, starlark.None, starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "current", &current, "total?", &total, "message?", &message); err != nil {
		return nil, err
	}
	st, err := stateOf(thread)
	if err != nil {
		return nil, err
	}
	cur, err := reportNumber(b.Name(), "current", current)
	if err != nil {
		return nil, err
	}
	var tot float64
	if total != starlark.None {
		if tot, err = reportNumber(b.Name(), "total", total); err != nil {
			return nil, err
		}
	}
	var msg string
	switch m := message.(type) {
	case starlark.NoneType:
	case starlark.String:
		msg = string(m)
	default:
		return nil, fmt.Errorf("%s: message must be a string or None, not %s", b.Name(), message.Type())
	}
	report.Progress(st.ctx, cur, tot, msg)
	return starlark.None, nil
}

// reportNumber accepts a finite, non-negative int or float.
func reportNumber(fn, what string, v starlark.Value) (float64, error) {
	var f float64
	switch t := v.(type) {
	case starlark.Int:
		f, _ = starlark.AsFloat(t)
	case starlark.Float:
		f = float64(t)
	default:
		return 0, fmt.Errorf("%s: %s must be an int or float, not %s", fn, what, v.Type())
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, fmt.Errorf("%s: %s must be a finite number not below 0, got %s", fn, what, v.String())
	}
	return f, nil
}

// log(level, message) reports a message to the caller, through the reporter of the
// evaluation's context; an MCP client receives it as notifications/message when its
// logging/setLevel lets that level through. level is debug, info, notice, warning
// (or warn), error, critical, alert or emergency; message is a string or any value
// JSON can carry (sent as structured data). The message is also written to the
// server's log at debug level, with the script position. Returns None.
func builtinLog(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var levelName string
	var message starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "level", &levelName, "message", &message); err != nil {
		return nil, err
	}
	st, err := stateOf(thread)
	if err != nil {
		return nil, err
	}
	level, err := report.ParseLevel(levelName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	var data any
	if s, ok := message.(starlark.String); ok {
		data = string(s)
	} else if data, err = FromStarlark(message); err != nil {
		return nil, fmt.Errorf("%s: message: %w", b.Name(), err)
	}
	slog.DebugContext(st.ctx, "starlang log", "pos", st.script.position(callerPos(thread)), "level", level.String(), "message", data)
	report.Log(st.ctx, level, "", data)
	return starlark.None, nil
}
