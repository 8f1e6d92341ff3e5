package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/recordstore"
)

// logStore writes one structured log line per record (sink: log), at info
// level. A log line is acknowledged as soon as it is handed to the log's
// handler: shipping is beyond it. The lines go to the handler whatever the log
// level: an audit trail is not diagnostics, and helix.log_level: warn must
// not silently drop it (nor make it retried for ever, holding up shutdown).
type logStore struct{ logger *slog.Logger }

func (s logStore) Write(ctx context.Context, recs []recordstore.Record) error {
	h := s.logger.Handler()
	emit := func(attrs ...slog.Attr) error {
		line := slog.NewRecord(time.Now(), slog.LevelInfo, "audit", 0)
		line.AddAttrs(attrs...)
		return h.Handle(ctx, line)
	}
	for _, r := range recs {
		var rec gateway.Record
		if err := json.Unmarshal(r.JSON, &rec); err != nil {
			if err := emit(slog.String("record", string(r.JSON))); err != nil {
				return err
			}
			continue
		}
		attrs := []slog.Attr{
			slog.String("id", rec.ID),
			slog.Time("time", rec.Time),
			slog.String("server", rec.Server),
			slog.String("principal", rec.Principal),
			slog.String("method", rec.Method),
			slog.String("name", rec.Name),
			slog.String("outcome", rec.Outcome),
			slog.Float64("latency_ms", rec.LatencyMS),
		}
		add := func(k, v string) {
			if v != "" {
				attrs = append(attrs, slog.String(k, v))
			}
		}
		add("audience", rec.Audience)
		add("upstream", rec.Upstream)
		add("upstream_session", rec.UpstreamSession)
		add("error", rec.Error)
		add("arguments_digest", rec.ArgumentsDigest)
		add("arguments", string(rec.Arguments))
		if rec.ResultBytes > 0 {
			attrs = append(attrs, slog.Int("result_bytes", rec.ResultBytes))
		}
		if err := emit(attrs...); err != nil {
			return err
		}
	}
	return nil
}

func (logStore) Close(context.Context) error { return nil }
