package step

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/jsonnum"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// What the waiting steps (approve:, await:, sleep:, until:, and elicit: in a
// durable run) have in common. In a durable run a waiting step parks the run
// (durable.Park): the run holds no goroutine until the wait is resolved, and
// then the step runs again with the resolution in its context and applies it.
// In a run that is not durable it waits in memory, holding its goroutine.

// notifyKey is the notify: key of approve: and await:, steps run with the
// callback URL in a header before the step waits.
func notifyKey(header string) config.Key {
	return config.Key{Name: "notify", Shape: config.Shape{Type: config.TypeSteps,
		Description: "Steps run before the step waits, on a copy of the exchange with header " + header + " set to the callback URL (when the app has one) — send it to a chat, a mail, the system that will call back; what they change stays in the copy. They run again if the process stops before the run is parked; give them idempotent targets."}}
}

// onOutcomeKey is an on_reject:/on_timeout: key.
func onOutcomeKey(name, what string) config.Key {
	return config.Key{Name: name, Shape: config.Shape{Type: config.TypeString, Default: "fail", Enum: []string{"fail", "continue"},
		Description: "What " + what + " does: fail the step with an error saying so, or continue (check the step's header)."}}
}

// continues reports whether an on_…: key says continue.
func continues(v *config.Values, key string) bool {
	return strings.EqualFold(v.String(key), "continue")
}

// buildNotify builds the notify: steps of a waiting step, nil without them.
func buildNotify(bc *BuildContext, v *config.Values) engine.Processor {
	if !v.Has("notify") {
		return nil
	}
	return nestedPipeline(bc, v.Steps("notify"))
}

// runNotify runs the notify: steps on a copy of ex with header set to url
// (when there is one): they tell someone where to answer, and what they do to
// the exchange (set-body for a chat message …) must not reach the run. ex gets
// the header too, for the steps after the wait.
func runNotify(ctx context.Context, notify engine.Processor, ex *exchange.Exchange, header, url string) error {
	if url != "" {
		ex.In().SetHeader(header, url)
	}
	if notify == nil {
		return nil
	}
	if err := engine.RunStep(ctx, notify, ex.Copy()); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// decodeData turns the JSON of a resolution into a Helix value (maps, lists,
// strings, json.Number-free numbers as the engine's JSON decoding gives them).
func decodeData(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, jsonnum.Normalize(&v)
}

// logWaitURL logs where a waiting step can be resolved, for the operator when
// no notify: sends it anywhere.
func logWaitURL(hc *engine.Context, step string, runID string, url string) {
	if url == "" {
		return
	}
	hc.Logger().Info("waiting step: resolve it at its callback URL", "step", step, "run", runID, "url", url)
}

// waitsOf returns the app's wait service (nil when the app has none).
func waitsOf(hc *engine.Context) *durable.Waits {
	if hc == nil {
		return nil
	}
	return durable.WaitsFor(hc)
}
