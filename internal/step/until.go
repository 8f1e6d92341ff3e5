package step

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func init() {
	Define(Kind{
		Name: "until",
		Description: "Waits until a point in time computed from the exchange, then goes on with the exchange unchanged; a time that has passed goes on at once. " +
			"The time is RFC 3339 (2026-12-24T18:00:00Z, with an offset or Z) or seconds since 1970. " +
			"In a durable workflow the run parks as with sleep:; otherwise the step waits in memory. " +
			"`until: \"${body.deliver_at}\"` is short for `until: {at: \"${body.deliver_at}\"}`.",
		Shape: config.Shape{Type: config.TypeObject, What: "an until step", Short: "at", Keys: []config.Key{
			{Name: "at", Shape: config.Shape{Type: config.TypeString,
				Description: "The time, with ${body.x}, ${header.X} and ${env:NAME} placeholders."}},
			{Name: "starlang", Shape: config.Shape{Type: config.TypeStarlang,
				Description: "A Starlang script whose value is the time (a string as for at:, or a number of seconds since 1970)."}},
		}},
		Build: buildUntil,
	})
}

// untilStep waits until a time the exchange says:
//
//	steps:
//	  - until: "${body.send_at}"
type untilStep struct {
	name   string
	at     string
	script *starlang.Script
}

func buildUntil(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &untilStep{name: Name(s), at: v.String("at")}
	if v.Has("at") {
		CheckPlaceholders(d, v.NodeOf("at"), v.PathOf("at"), st.at)
	}
	if sc := v.Get("starlang"); sc != nil {
		st.script = CompileScript(bc, d, sc.Node, sc.Path)
	}
	switch {
	case v.Has("at") && v.Has("starlang"):
		d.Errorf(v.Node, v.Path, "until has both at: and starlang:; keep one")
	case !v.Has("at") && !v.Has("starlang"):
		d.Errorf(v.Node, v.Path, "until needs at: (a time with placeholders) or starlang:").Hint = `for example until: "${body.deliver_at}"`
	}
	return st, d.Err()
}

func (u *untilStep) Name() string { return u.name }

func (u *untilStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	var v any
	if u.script != nil {
		res, err := u.script.EvalValue(ctx, ex)
		if err != nil {
			return fmt.Errorf("until: %w", err)
		}
		v = res.Value
	} else {
		s, err := uri.Expand(u.at, ex)
		if err != nil {
			return fmt.Errorf("until: at: %w", err)
		}
		v = s
	}
	t, err := parseTime(v)
	if err != nil {
		return fmt.Errorf("until: %w", err)
	}
	return waitUntil(ctx, "until", t)
}

// parseTime reads a point in time: RFC 3339 text or seconds since 1970.
func parseTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case int64:
		return time.Unix(x, 0), nil
	case int:
		return time.Unix(int64(x), 0), nil
	case float64:
		return time.Unix(0, int64(x*float64(time.Second))), nil
	case string:
		s := strings.TrimSpace(x)
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, nil
		}
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			return time.Unix(0, int64(n*float64(time.Second))), nil
		}
		if len(s) > 64 {
			s = s[:64] + "…"
		}
		return time.Time{}, fmt.Errorf("%q is no time: want RFC 3339 (2026-12-24T18:00:00Z) or seconds since 1970", s)
	}
	return time.Time{}, fmt.Errorf("a %T is no time: want RFC 3339 text or seconds since 1970", v)
}
