package capture

import (
	"strconv"
	"time"
)

// Status values of a capture.
const (
	StatusOK     = "ok"
	StatusFailed = "failed"
)

// Exchange is one captured exchange. It is immutable once published (the
// pages share it); the fields are its redacted, bounded picture.
type Exchange struct {
	// ID is the capture's id, the {id} of its console page.
	ID string
	// ExchangeID is the engine's id of the exchange.
	ExchangeID string
	Workflow   string
	Kind       string
	Trigger    string
	// Principal is who the exchange ran for ("" when nobody is known).
	Principal  string
	Start, End time.Time
	Status     string
	// Error is the failure's message (redacted); ErrorStep where it happened.
	Error     string
	ErrorStep string
	// ReplayOf is the capture id this exchange replayed ("" for an original).
	ReplayOf string
	// Input is the exchange as its workflow received it.
	Input Snapshot
	// Steps are the top-level steps that ran, in order.
	Steps         []Step
	StepsNotShown int
	// NotReplayable says why the exchange cannot be replayed ("" when it can).
	NotReplayable string

	replay []byte
	size   int64
	seq    uint64 // ring position
}

// Duration is how long the exchange ran.
func (e *Exchange) Duration() time.Duration { return e.End.Sub(e.Start) }

// Replayable reports whether the exchange's whole input was kept.
func (e *Exchange) Replayable() bool { return e.replay != nil }

// Step is one top-level step of a captured exchange.
type Step struct {
	Index    int
	Name     string
	Start    time.Time
	Duration time.Duration
	Error    string
	// After is the exchange once the step ended.
	After Snapshot
}

// Path names the step for people: "step 2 (transform)".
func (s Step) Path() string {
	p := "step " + strconv.Itoa(s.Index+1)
	if s.Name != "" {
		p += " (" + s.Name + ")"
	}
	return p
}

// Snapshot is an exchange's headers and body at one moment, as text.
type Snapshot struct {
	Headers []Header
	// HeadersNotShown counts headers over the cap.
	HeadersNotShown int
	// Body is the body as JSON (or text for a string or bytes), at most the
	// body limit; BodyType names its kind (object, list, text, bytes, or the
	// Go type of another value).
	Body      string
	BodyType  string
	BodyBytes int // the body text's full length before truncation
	Truncated bool
	// Redacted is true when a header or body field was hidden;
	// BodyRedacted when something in the body was.
	Redacted, BodyRedacted bool
	// Failed holds the exchange's exception message at this moment, if any.
	Failed string
}

// Header is one header as shown.
type Header struct {
	Name, Value string
	Redacted    bool
	Truncated   bool
}

// Per-object overheads counted in a capture's footprint, so that the budget
// bounds memory rather than only the text (struct headers, slice headers,
// pointers, map-free layout).
const (
	recordOverhead   = 512
	stepOverhead     = 160
	snapshotOverhead = 96
	headerOverhead   = 80
)

func (s *Snapshot) footprint() int64 {
	n := int64(snapshotOverhead + len(s.Body) + len(s.BodyType) + len(s.Failed))
	for _, h := range s.Headers {
		n += int64(headerOverhead + len(h.Name) + len(h.Value))
	}
	return n
}

// footprint is the memory e holds, approximately and from above.
func (e *Exchange) footprint() int64 {
	n := int64(recordOverhead + len(e.ID) + len(e.ExchangeID) + len(e.Workflow) + len(e.Kind) +
		len(e.Trigger) + len(e.Principal) + len(e.Error) + len(e.ErrorStep) + len(e.ReplayOf) +
		len(e.NotReplayable) + len(e.replay))
	n += e.Input.footprint()
	for i := range e.Steps {
		s := &e.Steps[i]
		n += int64(stepOverhead+len(s.Name)+len(s.Error)) + s.After.footprint()
	}
	n += int64(cap(e.Steps)-len(e.Steps)) * stepOverhead
	return n
}

// Size is the memory the capture is counted for in the budget.
func (e *Exchange) Size() int64 { return e.size }
