package durable

import (
	"context"
	"sync"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// What the waiting steps (approve:, sleep:, until:, await:, elicit:) find
// beside the contract of api.go: the app's [Waits], and the sources their
// await: steps correlate records from.

var waitsOf sync.Map // *engine.Context → *Waits

// AttachWaits makes w the wait service of the app whose engine is ec;
// AttachWaits(ec, nil) detaches it.
func AttachWaits(ec *engine.Context, w *Waits) {
	if w == nil {
		waitsOf.Delete(ec)
		return
	}
	waitsOf.Store(ec, w)
}

// WaitsFor returns the wait service of the app whose engine is ec, or nil.
func WaitsFor(ec *engine.Context) *Waits {
	w, _ := waitsOf.Load(ec)
	ws, _ := w.(*Waits)
	return ws
}

// AwaitSource is a consumer endpoint an await: step takes records from: every
// record it receives is handed to [Waits.Deliver] under the key Match computes
// from it, so that the run whose await: waits for that key goes on.
type AwaitSource struct {
	// URI is the consumer endpoint (a Kafka topic …).
	URI string
	// Name is how waits name the source (Wait.Source): the URI as shown,
	// without secrets.
	Name string
	// MatchText is what Match computes, as written (two await: steps on one
	// endpoint with the same MatchText share a matcher).
	MatchText string
	// Match computes a received record's correlation key.
	Match func(ctx context.Context, ex *exchange.Exchange) (string, error)
}

var sourcesOf sync.Map // *engine.Context → *sourceList

type sourceList struct {
	mu   sync.Mutex
	list []AwaitSource
}

// AddAwaitSource registers a source of the app whose engine is ec (await:
// steps do it when they are built); the app starts one consumer per source.
func AddAwaitSource(ec *engine.Context, s AwaitSource) {
	v, _ := sourcesOf.LoadOrStore(ec, &sourceList{})
	l := v.(*sourceList)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, s)
}

// AwaitSources lists the sources registered for ec.
func AwaitSources(ec *engine.Context) []AwaitSource {
	v, ok := sourcesOf.Load(ec)
	if !ok {
		return nil
	}
	l := v.(*sourceList)
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]AwaitSource(nil), l.list...)
}

var waiting sync.Map // *engine.Context → true

// MarkWaiting records that a workflow of ec has a waiting step, so that the
// app starts its wait service (and creates the key that signs callback links)
// only when something can wait.
func MarkWaiting(ec *engine.Context) {
	if ec != nil {
		waiting.Store(ec, true)
	}
}

// HasWaiting reports whether MarkWaiting was called for ec.
func HasWaiting(ec *engine.Context) bool {
	_, ok := waiting.Load(ec)
	return ok
}

// ForgetWaiting drops what was recorded for ec (its app stopped).
func ForgetWaiting(ec *engine.Context) {
	waiting.Delete(ec)
	sourcesOf.Delete(ec)
}
