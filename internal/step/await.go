package step

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Headers the await step sets.
const (
	// HeaderAwait is how an await step ended: received or timeout.
	HeaderAwait = "HelixAwait"
	// HeaderAwaitURL is the callback URL an HTTP await waits on, set before
	// the step's notify: steps run.
	HeaderAwaitURL = "HelixAwaitUrl"
)

// defaultAwaitMatch is what a received record is correlated by when the step
// says nothing: the record key of a Kafka topic.
const defaultAwaitMatch = "${header.HelixKafkaKey}"

func init() {
	Define(Kind{
		Name: "await",
		Description: "Waits for something from outside, which then becomes the body (or the variable named by into:): " +
			"without from:, an HTTP POST to the step's callback URL (a signed link good for one call: header HelixAwaitUrl, which the notify: steps can send to whoever calls back); " +
			"with from:, a record of that consumer endpoint (a Kafka topic …) whose match: value equals the step's key:. " +
			"A record that comes before the run waits for it is kept for a while (an inbox) and taken when the run gets there. " +
			"Header HelixAwait is received or timeout. In a durable workflow the run parks: it holds no goroutine and survives restarts; otherwise the step waits in memory.",
		Shape: config.Shape{Type: config.TypeObject, What: "an await step", Keys: []config.Key{
			{Name: "from", Shape: config.Shape{Type: config.TypeURI,
				Description: "A consumer endpoint whose records the step waits for (a Kafka topic); absent: an HTTP callback."}},
			{Name: "key", Shape: config.Shape{Type: config.TypeString,
				Description: "The correlation key this run waits for, with ${body.x}, ${header.X} placeholders (required with from:)."}},
			{Name: "match", Shape: config.Shape{Type: config.TypeString, Default: defaultAwaitMatch,
				Description: "What of a received record is compared with key:, with placeholders on the record (default: its Kafka record key)."}},
			questionIDKey(),
			{Name: "timeout", Shape: config.Shape{Type: config.TypeDuration,
				Description: "How long to wait; absent: until it comes."}},
			onOutcomeKey("on_timeout", "the timeout"),
			askIntoKey("what was received", "it becomes"),
			notifyKey(HeaderAwaitURL),
		}},
		Build: buildAwait,
	})
}

// awaitStep waits for an HTTP callback or a correlated record:
//
//	steps:
//	  - target: kafka://payment-requests
//	  - await:
//	      from: kafka://payment-results?brokers=localhost:9092
//	      key: "${body.payment_id}"
//	      timeout: 15m
type awaitStep struct {
	name      string
	hc        *engine.Context
	id        string
	from      string // the source's shown name; "" for an HTTP callback
	key       string
	timeout   time.Duration
	timeoutGo bool
	into      string
	notify    engine.Processor
}

func buildAwait(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &awaitStep{name: Name(s), hc: bc.HC, key: v.String("key"), timeout: v.Duration("timeout"),
		timeoutGo: continues(v, "on_timeout"), into: v.String("into")}
	st.id = questionID(d, v, st.name)
	if v.Has("timeout") && st.timeout <= 0 {
		d.Errorf(v.NodeOf("timeout"), v.PathOf("timeout"), "timeout must be a positive duration, not %s", st.timeout).Hint = "remove timeout: to wait until it comes"
	}
	if v.Has("into") && st.into == "" {
		d.Errorf(v.NodeOf("into"), v.PathOf("into"), "into: names a variable and must not be empty").Hint = "remove into: to put what was received into the body"
	}
	if v.Has("key") {
		CheckPlaceholders(d, v.NodeOf("key"), v.PathOf("key"), st.key)
	}
	match := defaultAwaitMatch
	if v.Has("match") {
		match = v.String("match")
		CheckPlaceholders(d, v.NodeOf("match"), v.PathOf("match"), match)
	}
	if from := v.String("from"); from != "" {
		if !v.Has("key") {
			d.Errorf(v.Node, v.Path, "an await with from: needs key:, the value its record must match").Hint = `for example key: "${body.order_id}"`
		}
		if bc.HC != nil {
			st.from = bc.HC.ShownURI(from)
			durable.AddAwaitSource(bc.HC, durable.AwaitSource{URI: from, Name: st.from, MatchText: match,
				Match: func(_ context.Context, ex *exchange.Exchange) (string, error) { return uri.Expand(match, ex) }})
		}
	} else if v.Has("key") || v.Has("match") {
		d.Errorf(v.Node, v.Path, "key: and match: correlate records of from:; an HTTP await is reached by its own callback URL").Hint = "add from: with the consumer endpoint, or remove key: and match:"
	}
	st.notify = buildNotify(bc, v)
	durable.MarkWaiting(bc.HC)
	return st, d.Err()
}

func (a *awaitStep) Name() string { return a.name }

func (a *awaitStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	if r, ok := durable.ResolutionFrom(ctx); ok { // the run's only wait
		return a.apply(ex, r)
	}
	wt := durable.Wait{Kind: durable.WaitAwait, Key: a.id, Source: a.from}
	if a.from != "" {
		key, err := uri.Expand(a.key, ex)
		if err != nil {
			return fmt.Errorf("await: key: %w", err)
		}
		if key == "" {
			return fmt.Errorf("await: key %q is empty for this exchange: nothing to wait for", a.key)
		}
		wt.Key = key
	}
	// One of several waits: the key is the exchange's, the same as when the
	// run parked (the step runs again on the exchange it had then).
	if r, ok := durable.ResolutionFor(ctx, wt.Key); ok {
		return a.apply(ex, r)
	}
	if a.timeout > 0 {
		wt.Due = time.Now().Add(a.timeout)
	}
	waits := waitsOf(a.hc)
	if runID, ok := durable.RunID(ctx); ok {
		url := ""
		if a.from == "" {
			url = waits.URL(runID, wt)
		}
		if err := runNotify(ctx, a.notify, ex, HeaderAwaitURL, url); err != nil {
			return fmt.Errorf("await: %w", err)
		}
		logWaitURL(a.hc, a.notify, a.name, runID, url)
		return durable.Park(wt)
	}
	if waits == nil {
		return errors.New("await: the app has no wait service (no callback route, no await source): this workflow cannot receive anything")
	}
	held := waits.Hold(wt)
	defer held.Release()
	url := ""
	if a.from == "" {
		url = held.URL
	}
	if err := runNotify(ctx, a.notify, ex, HeaderAwaitURL, url); err != nil {
		return fmt.Errorf("await: %w", err)
	}
	logWaitURL(a.hc, a.notify, a.name, "", url)
	r, err := held.Wait(ctx)
	if err != nil {
		return fmt.Errorf("await: %w", err)
	}
	return a.apply(ex, r)
}

// apply puts what was received into the body (or into:), or ends on a timeout.
func (a *awaitStep) apply(ex *exchange.Exchange, r durable.Resolution) error {
	ex.In().SetHeader(HeaderAwait, r.Kind)
	switch r.Kind {
	case durable.ResolvedReceived:
		var got struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(r.Data, &got); err != nil {
			return fmt.Errorf("await: what was received is not readable: %w", err)
		}
		body, err := decodeData(got.Body)
		if err != nil {
			return fmt.Errorf("await: what was received is not readable: %w", err)
		}
		if a.into != "" {
			ex.SetVariable(a.into, body)
		} else {
			ex.In().SetBody(body)
		}
		return nil
	case durable.ResolvedTimeout:
		if a.timeoutGo {
			return nil
		}
		return fmt.Errorf("await: nothing came within %s; set on_timeout: continue to go on and check header %s", a.timeout, HeaderAwait)
	}
	return fmt.Errorf("await: the wait ended with %q, which brings nothing", r.Kind)
}
