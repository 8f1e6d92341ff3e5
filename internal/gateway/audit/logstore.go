package audit

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/recordstore"
)

// logStore writes one structured log line per record (sink: log), at info
// level. A log line is acknowledged as soon as it is handed to the logger: the
// log's level and shipping are beyond it. A level that hides info lines is the
// operator's choice, not a failure: refusing the records would retry them
// forever and hold up shutdown (New warns once instead).
type logStore struct{ logger *slog.Logger }

func (s logStore) Write(ctx context.Context, recs []recordstore.Record) error {
	if !s.logger.Enabled(ctx, slog.LevelInfo) {
		return nil
	}
	for _, r := range recs {
		var rec gateway.Record
		if err := json.Unmarshal(r.JSON, &rec); err != nil {
			s.logger.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("record", string(r.JSON)))
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
		s.logger.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
	}
	return nil
}

func (logStore) Close(context.Context) error { return nil }
