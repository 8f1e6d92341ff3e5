package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns h wrapped so that every record's message and attribute values
// pass through [Text] before h sees them. Wrapping twice is a no-op.
//
// String, error and fmt.Stringer values are redacted as text; other values (a
// struct, a map) keep their kind unless their printed form holds something to
// hide, in which case the redacted printed form replaces them.
func Handler(h slog.Handler) slog.Handler {
	if _, ok := h.(*handler); ok {
		return h
	}
	return &handler{inner: h}
}

type handler struct{ inner slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = redactAttr(a)
	}
	return &handler{inner: h.inner.WithAttrs(clean)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{inner: h.inner.WithGroup(name)}
}

// maxGroupDepth bounds the recursion into nested groups; deeper groups are
// printed, and redacted, as text.
const maxGroupDepth = 32

func redactAttr(a slog.Attr) slog.Attr {
	return slog.Attr{Key: a.Key, Value: redactValue(a.Value, 0)}
}

func redactValue(v slog.Value, depth int) slog.Value {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(Text(v.String()))
	case slog.KindGroup:
		if depth >= maxGroupDepth {
			return slog.StringValue(Text(v.String()))
		}
		attrs := v.Group()
		clean := make([]slog.Attr, len(attrs))
		for i, a := range attrs {
			clean[i] = slog.Attr{Key: a.Key, Value: redactValue(a.Value, depth+1)}
		}
		return slog.GroupValue(clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.StringValue(Text(x.Error()))
		case fmt.Stringer:
			return slog.StringValue(Text(x.String()))
		default:
			printed := fmt.Sprintf("%+v", x)
			if clean := Text(printed); clean != printed {
				return slog.StringValue(clean)
			}
		}
	}
	return v
}
