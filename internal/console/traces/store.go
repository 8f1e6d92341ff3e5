// Package traces is the console's Traces page: the last traces of the
// application (when helix.tracing is on) as a list and, per trace, a
// waterfall of its spans drawn on the server.
//
// The spans come from a [Store], an OpenTelemetry span processor registered
// beside the exporter (internal/tracing/export). It keeps the last traces
// within a budget of spans and bytes; attribute values and event texts are
// redacted (internal/redact) and cut as they are recorded. A span ends on the
// exchange's own goroutine, so OnEnd copies what it keeps under a short
// writers' lock and returns; pages read immutable snapshots through atomic
// pointers and never take that lock.
package traces

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/internal/tracing"
)

// Limits bound what a Store keeps; zero values mean the defaults.
type Limits struct {
	// MaxTraces is how many traces are kept (default 200).
	MaxTraces int
	// MaxSpans bounds the spans of all traces together (default 20000).
	MaxSpans int
	// MaxBytes bounds their names, attributes and events together (default 16 MiB).
	MaxBytes int64
	// MaxSpansPerTrace bounds one trace (default 500); later spans are counted
	// as omitted.
	MaxSpansPerTrace int
	// MaxAttributes bounds the attributes and the events kept per span
	// (default 32 each); MaxValue the bytes of one value (default 512).
	MaxAttributes int
	MaxValue      int
}

// Defaults of [Limits].
const (
	DefaultMaxTraces        = 200
	DefaultMaxSpans         = 20000
	DefaultMaxBytes         = 16 << 20
	DefaultMaxSpansPerTrace = 500
	DefaultMaxAttributes    = 32
	DefaultMaxValue         = 512
)

// spanOverhead is what a span costs beyond its texts in the byte budget.
const spanOverhead = 160

// Span is one recorded span; it never changes once recorded.
type Span struct {
	SpanID, ParentID string
	Name             string
	Kind             string
	Start, End       time.Time
	// Status is ok, error or unset; StatusText the error's description.
	Status     string
	StatusText string
	Attributes []Attr
	Events     []Event
	// Dropped counts the attributes and events left out.
	Dropped int
}

// Attr is one attribute as text.
type Attr struct{ Key, Value string }

// Event is one span event.
type Event struct {
	Name       string
	Time       time.Time
	Attributes []Attr
}

// Trace is a snapshot of one trace.
type Trace struct {
	ID    string
	Spans []Span
	// Omitted counts the spans beyond MaxSpansPerTrace.
	Omitted int
	// ExchangeIDs are the exchanges whose spans are in the trace.
	ExchangeIDs []string
	// Seen is when its first span ended here.
	Seen time.Time
}

// Store is the console's span processor; safe for concurrent use.
type Store struct {
	lim Limits

	mu    sync.Mutex // writers only
	ring  []*slot
	byID  map[string]*slot
	spans int
	bytes int64

	list    atomic.Pointer[[]*slot]
	evicted atomic.Uint64
}

type slot struct {
	snap    atomic.Pointer[Trace]
	cur     Trace
	size    int64
	evicted bool
}

var _ sdktrace.SpanProcessor = (*Store)(nil)

// NewStore returns an empty store with the limits lim.
func NewStore(lim Limits) *Store {
	if lim.MaxTraces <= 0 {
		lim.MaxTraces = DefaultMaxTraces
	}
	if lim.MaxSpans <= 0 {
		lim.MaxSpans = DefaultMaxSpans
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.MaxSpansPerTrace <= 0 {
		lim.MaxSpansPerTrace = DefaultMaxSpansPerTrace
	}
	if lim.MaxAttributes <= 0 {
		lim.MaxAttributes = DefaultMaxAttributes
	}
	if lim.MaxValue <= 0 {
		lim.MaxValue = DefaultMaxValue
	}
	s := &Store{lim: lim, byID: map[string]*slot{}}
	s.list.Store(&[]*slot{})
	return s
}

// Limits returns the store's limits with the defaults filled in.
func (s *Store) Limits() Limits { return s.lim }

// Traces returns the kept traces, the most recently started first.
func (s *Store) Traces() []*Trace {
	l := *s.list.Load()
	out := make([]*Trace, 0, len(l))
	for i := len(l) - 1; i >= 0; i-- {
		out = append(out, l[i].snap.Load())
	}
	return out
}

// Trace returns the trace with id (32 hex digits), if kept.
func (s *Store) Trace(id string) (*Trace, bool) {
	for _, sl := range *s.list.Load() {
		if t := sl.snap.Load(); t.ID == id {
			return t, true
		}
	}
	return nil, false
}

// ByExchange returns the kept trace that has a span of exchange id.
func (s *Store) ByExchange(id string) (*Trace, bool) {
	l := *s.list.Load()
	for i := len(l) - 1; i >= 0; i-- {
		t := l[i].snap.Load()
		if slices.Contains(t.ExchangeIDs, id) {
			return t, true
		}
	}
	return nil, false
}

// Evicted counts the traces dropped to keep within the limits.
func (s *Store) Evicted() uint64 { return s.evicted.Load() }

// Usage is the spans and bytes kept, as the budget counts them.
func (s *Store) Usage() (spans int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spans, s.bytes
}

// OnStart does nothing: a span is kept when it ends.
func (s *Store) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// Shutdown and ForceFlush have nothing to do: nothing is queued.
func (s *Store) Shutdown(context.Context) error   { return nil }
func (s *Store) ForceFlush(context.Context) error { return nil }

// clip redacts v and cuts it to MaxValue bytes; see the agents recorder's
// clip for why redaction runs on a bounded prefix.
func (s *Store) clip(v string) string {
	n := s.lim.MaxValue
	if len(v) > 2*n {
		return cut(redact.Text(v[:2*n]), n, len(v))
	}
	v = redact.Text(v)
	if len(v) <= n {
		return v
	}
	return cut(v, n, len(v))
}

func cut(s string, n, total int) string {
	return console.Cut(s, n) + "… (" + strconv.Itoa(total) + " bytes, cut)"
}

func (s *Store) attrs(kvs []attribute.KeyValue, size *int64, dropped *int) []Attr {
	var out []Attr
	for i, kv := range kvs {
		if i == s.lim.MaxAttributes {
			*dropped += len(kvs) - i
			break
		}
		a := Attr{Key: s.clip(string(kv.Key)), Value: s.clip(kv.Value.String())}
		*size += int64(len(a.Key) + len(a.Value))
		out = append(out, a)
	}
	return out
}

// OnEnd keeps the span (sdktrace.SpanProcessor).
func (s *Store) OnEnd(ro sdktrace.ReadOnlySpan) {
	sc := ro.SpanContext()
	sp := Span{SpanID: sc.SpanID().String(), Name: s.clip(ro.Name()), Kind: ro.SpanKind().String(),
		Start: ro.StartTime(), End: ro.EndTime()}
	if p := ro.Parent(); p.IsValid() {
		sp.ParentID = p.SpanID().String()
	}
	switch st := ro.Status(); st.Code {
	case codes.Error:
		sp.Status, sp.StatusText = "error", s.clip(st.Description)
	case codes.Ok:
		sp.Status = "ok"
	default:
		sp.Status = "unset"
	}
	size := int64(spanOverhead + len(sp.Name) + len(sp.StatusText))
	sp.Attributes = s.attrs(ro.Attributes(), &size, &sp.Dropped)
	var exchangeID string
	for _, kv := range ro.Attributes() {
		if kv.Key == tracing.AttrExchangeID {
			exchangeID = s.clip(kv.Value.AsString())
		}
	}
	for i, ev := range ro.Events() {
		if i == s.lim.MaxAttributes {
			sp.Dropped += len(ro.Events()) - i
			break
		}
		e := Event{Name: s.clip(ev.Name), Time: ev.Time}
		e.Attributes = s.attrs(ev.Attributes, &size, &sp.Dropped)
		size += int64(len(e.Name)) + spanOverhead/4
		sp.Events = append(sp.Events, e)
	}
	s.add(sc.TraceID().String(), sp, size, exchangeID)
}

func (s *Store) add(traceID string, sp Span, size int64, exchangeID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.byID[traceID]
	if sl == nil {
		sl = &slot{cur: Trace{ID: traceID, Seen: time.Now()}}
		s.byID[traceID] = sl
		s.ring = append(s.ring, sl)
		defer s.publishList()
	}
	if len(sl.cur.Spans) >= s.lim.MaxSpansPerTrace {
		sl.cur.Omitted++
	} else {
		sl.cur.Spans = append(sl.cur.Spans, sp)
		sl.size += size
		s.spans++
		s.bytes += size
	}
	if exchangeID != "" && !slices.Contains(sl.cur.ExchangeIDs, exchangeID) && len(sl.cur.ExchangeIDs) < s.lim.MaxSpansPerTrace {
		sl.cur.ExchangeIDs = append(sl.cur.ExchangeIDs, exchangeID)
		sl.size += int64(len(exchangeID))
		s.bytes += int64(len(exchangeID))
	}
	snap := sl.cur
	snap.Spans = slices.Clip(sl.cur.Spans)
	snap.ExchangeIDs = slices.Clip(sl.cur.ExchangeIDs)
	sl.snap.Store(&snap)
	if len(s.ring) > s.lim.MaxTraces || s.spans > s.lim.MaxSpans || s.bytes > s.lim.MaxBytes {
		s.trim(sl)
	}
}

// trim evicts the oldest traces beyond the limits (keep, the trace being
// written, last).
func (s *Store) trim(keep *slot) {
	for len(s.ring) > 1 && (len(s.ring) > s.lim.MaxTraces || s.spans > s.lim.MaxSpans || s.bytes > s.lim.MaxBytes) {
		i := 0
		if s.ring[0] == keep {
			i = 1
		}
		victim := s.ring[i]
		s.ring = slices.Delete(s.ring, i, i+1)
		delete(s.byID, victim.cur.ID)
		victim.evicted = true
		s.spans -= len(victim.cur.Spans)
		s.bytes -= victim.size
		s.evicted.Add(1)
	}
	s.publishList()
}

func (s *Store) publishList() {
	l := slices.Clone(s.ring)
	s.list.Store(&l)
}
