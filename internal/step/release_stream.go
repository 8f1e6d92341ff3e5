package step

import (
	"context"
	"time"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	Define(Kind{
		Name: "release-stream",
		Description: "Frees the MCP client's connection while the workflow runs on: the server ends the tool call's SSE response stream now and tells the client " +
			"to reconnect after retry; the client resumes the stream (GET with Last-Event-ID) and gets the progress, logs and answer that came meanwhile " +
			"(MCP 2025-11-25 SSE polling). Where the call's stream cannot be resumed (stdio, stateless servers, older protocols, calls that are no MCP tool call) " +
			"the step does nothing and the call keeps its connection. The exchange goes on unchanged. `release-stream: 2s` is short for `release-stream: {retry: 2s}`.",
		Shape: config.Shape{Type: config.TypeObject, What: "a release-stream step", Short: "retry", Keys: []config.Key{
			{Name: "retry", Shape: config.Shape{Type: config.TypeDuration, Default: "1s",
				Description: "How long the client should wait before it reconnects (the SSE retry: field); 0 leaves it to the client."}},
		}},
		Build: buildReleaseStream,
	})
}

// releaseStreamStep asks the transport of the calling MCP client to end the call's
// response stream (ask.StreamReleaser).
type releaseStreamStep struct {
	name  string
	retry time.Duration
}

// The step changes how the answer travels, so a tool with it must leave the
// fast path (whose answer is one application/json body) like an asking step.
var _ ask.Asker = (*releaseStreamStep)(nil)

func buildReleaseStream(_ *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &releaseStreamStep{name: Name(s), retry: time.Second}
	if v.Has("retry") {
		st.retry = v.Duration("retry")
		if st.retry < 0 {
			d.Errorf(v.NodeOf("retry"), v.PathOf("retry"), "retry is a duration of 0 or more, not %s", st.retry).Hint =
				"write how long the client waits before it reconnects, e.g. retry: 1s"
		}
	}
	return st, d.Err()
}

func (r *releaseStreamStep) Name() string { return r.name }

func (r *releaseStreamStep) AsksClient() bool { return true }

func (r *releaseStreamStep) Process(ctx context.Context, _ *exchange.Exchange) error {
	if rel, ok := ask.FromContext(ctx).(ask.StreamReleaser); ok {
		rel.ReleaseStream(r.retry)
	}
	return nil
}
