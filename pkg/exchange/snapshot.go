package exchange

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/arvenza/helix/internal/jsonnum"
	"github.com/arvenza/helix/internal/redact"
)

// A Snapshot is an exchange as a checkpoint keeps it: what a later step needs to
// go on from there in another process (a durable run resumed after a crash, an
// MCP call resumed after it asked its client). Its encoding is JSON in which the
// values JSON cannot tell apart are tagged: a []byte is {"\u0000bytes": base64},
// a registered type (RegisterSnapshotType) is {"\u0000<tag>": its JSON}, and a
// map that would look like a tag is {"\u0000map": map}. Numbers come back as
// int64 or float64 (jsonnum), the way tool arguments are decoded.
//
// A value of another type (a channel, a component's private struct) has no
// encoding: Encode fails naming where it is, rather than keeping less than the
// exchange held.
type Snapshot struct {
	Body         any
	Headers      map[string]any
	Variables    map[string]any
	Pattern      Pattern
	FromWorkflow string
	// Exception is the exchange's failure, kept as data: its message and class,
	// never its Go type.
	Exception *SnapshotError
}

// SnapshotError is a failure as a snapshot keeps it, and the error a restored
// exchange carries: it answers with the status and the client message the
// original failure had.
type SnapshotError struct {
	Message string `json:"message"`
	// Client is the message for whoever sent the exchange (ClientMessage).
	Client string `json:"client,omitempty"`
	// Class is the failure class (FailureClasses) of Status.
	Class  string `json:"class"`
	Status int    `json:"status"`
}

func (e *SnapshotError) Error() string         { return e.Message }
func (e *SnapshotError) ClientMessage() string { return e.Client }
func (e *SnapshotError) HTTPStatus() int       { return e.Status }

// snapshotErrorOf is err as a snapshot keeps it.
func snapshotErrorOf(err error) *SnapshotError {
	if err == nil {
		return nil
	}
	var se *SnapshotError
	if errors.As(err, &se) && se == err {
		return se
	}
	status := HTTPStatus(err)
	return &SnapshotError{
		Message: redact.Text(err.Error()),
		Client:  ClientMessage(err),
		Class:   FailureClass(status),
		Status:  status,
	}
}

// TakeSnapshot returns ex as a snapshot, deep-copied so that later steps may
// change the exchange in place without changing the snapshot.
func TakeSnapshot(ex *Exchange) *Snapshot {
	s := &Snapshot{
		Body:         DeepCopy(ex.In().Body()),
		Pattern:      ex.Pattern(),
		FromWorkflow: ex.FromWorkflow(),
		Exception:    snapshotErrorOf(ex.Exception()),
	}
	if h := ex.In().Headers(); len(h) > 0 {
		s.Headers = copyMap(h)
	}
	if len(ex.variables) > 0 {
		s.Variables = copyMap(ex.variables)
	}
	return s
}

// Restore makes ex what s recorded: its body, headers, variables, pattern,
// origin and exception. Headers and variables ex has that s does not are removed.
func (s *Snapshot) Restore(ex *Exchange) {
	msg := ex.In()
	msg.SetBody(s.Body)
	for k := range msg.Headers() {
		msg.RemoveHeader(k)
	}
	for k, v := range s.Headers {
		msg.SetHeader(k, v)
	}
	clear(ex.variables)
	for k, v := range s.Variables {
		ex.SetVariable(k, v)
	}
	ex.SetPattern(s.Pattern)
	ex.SetFromWorkflow(s.FromWorkflow)
	if s.Exception != nil {
		ex.SetException(s.Exception)
	} else {
		ex.SetException(nil)
	}
}

// NewFromSnapshot returns a new exchange (with a new id) holding what s recorded.
func NewFromSnapshot(s *Snapshot) *Exchange {
	ex := New(s.Pattern)
	s.Restore(ex)
	return ex
}

// SnapshotTooLargeError is the error of a snapshot whose encoding is over the
// limit its caller set.
type SnapshotTooLargeError struct {
	Size, Limit int
}

func (e *SnapshotTooLargeError) Error() string {
	return fmt.Sprintf("the exchange is %s encoded, over the limit of %s", FormatBytes(e.Size), FormatBytes(e.Limit))
}

// FormatBytes writes n bytes the way a person reads them (3.1 MiB, 512 KiB, 20 B).
func FormatBytes(n int) string {
	switch {
	case n >= 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MiB"
	case n >= 1<<10:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<10))) + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// wire is a snapshot's JSON.
type wire struct {
	Body         any            `json:"b"`
	Headers      any            `json:"h,omitempty"`
	Variables    any            `json:"v,omitempty"`
	Pattern      *Pattern       `json:"p,omitempty"`
	FromWorkflow string         `json:"w,omitempty"`
	Exception    *SnapshotError `json:"e,omitempty"`
}

// Encode returns s's encoding. A value with no encoding fails with an error
// naming where it is (body.items[3]); limit > 0 bounds the encoding's size
// (a *SnapshotTooLargeError over it).
func (s *Snapshot) Encode(limit int) (json.RawMessage, error) {
	w := wire{FromWorkflow: s.FromWorkflow, Exception: s.Exception}
	if s.Pattern != InOnly {
		p := s.Pattern
		w.Pattern = &p
	}
	var err error
	if w.Body, err = tagValue(s.Body, "body", 0); err != nil {
		return nil, err
	}
	if len(s.Headers) > 0 {
		if w.Headers, err = tagValue(s.Headers, "headers", 0); err != nil {
			return nil, err
		}
	}
	if len(s.Variables) > 0 {
		if w.Variables, err = tagValue(s.Variables, "variables", 0); err != nil {
			return nil, err
		}
	}
	raw, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if limit > 0 && len(raw) > limit {
		return nil, &SnapshotTooLargeError{Size: len(raw), Limit: limit}
	}
	return raw, nil
}

// DecodeSnapshot decodes what [Snapshot.Encode] made.
func DecodeSnapshot(raw []byte) (*Snapshot, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var w struct {
		Body         any            `json:"b"`
		Headers      any            `json:"h"`
		Variables    any            `json:"v"`
		Pattern      *Pattern       `json:"p"`
		FromWorkflow string         `json:"w"`
		Exception    *SnapshotError `json:"e"`
	}
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	s := &Snapshot{FromWorkflow: w.FromWorkflow, Exception: w.Exception}
	if w.Pattern != nil {
		s.Pattern = *w.Pattern
	}
	var err error
	if s.Body, err = untag(w.Body, "body"); err != nil {
		return nil, err
	}
	h, err := untag(w.Headers, "headers")
	if err != nil {
		return nil, err
	}
	v, err := untag(w.Variables, "variables")
	if err != nil {
		return nil, err
	}
	var ok bool
	if s.Headers, ok = h.(map[string]any); !ok && h != nil {
		return nil, errors.New("snapshot: headers are no object")
	}
	if s.Variables, ok = v.(map[string]any); !ok && v != nil {
		return nil, errors.New("snapshot: variables are no object")
	}
	return s, nil
}

// ---- typed values -----------------------------------------------------------

// snapshotCodec encodes the values of one registered type.
type snapshotCodec struct {
	tag string
	typ reflect.Type
	// encode returns the value as plain snapshot data (itself encoded like a
	// body: bytes and typed values inside it are tagged).
	encode func(any) (any, error)
	// decode makes the value from that data, decoded (numbers as int64/float64).
	decode func(any) (any, error)
}

var (
	codecMu     sync.RWMutex
	codecByType = map[reflect.Type]*snapshotCodec{}
	codecByTag  = map[string]*snapshotCodec{}
)

// Tags with a meaning of their own.
const (
	bytesTag = "bytes"
	mapTag   = "map"
	// A json.RawMessage (a tool's structured result, a component's raw JSON)
	// is kept as its text, unchanged.
	rawTag  = "json"
	tagMark = "\x00"
)

// RegisterSnapshotType lets snapshots keep values of type T (a component's
// result type set as a body) as T's JSON under tag, decoded back into a T. A T
// with fields of type any gets float64 numbers back there: such a type
// registers with [RegisterSnapshotCodec] instead. The package that defines T
// registers it, in an init function.
func RegisterSnapshotType[T any](tag string) {
	RegisterSnapshotCodec(tag, func(v T) (any, error) {
		raw, err := json.Marshal(v)
		return json.RawMessage(raw), err
	}, func(data any) (T, error) {
		var v T
		raw, err := json.Marshal(data)
		if err == nil {
			err = json.Unmarshal(raw, &v)
		}
		return v, err
	})
}

// RegisterSnapshotCodec lets snapshots keep values of type T under tag: encode
// turns one into plain data (maps, lists, strings, numbers, bytes, registered
// values), decode makes it again from that data. Registering a tag or a type
// twice panics (a programming error, caught by any test that loads the package).
func RegisterSnapshotCodec[T any](tag string, encode func(T) (any, error), decode func(any) (T, error)) {
	typ := reflect.TypeFor[T]()
	if tag == "" || tag == bytesTag || tag == mapTag || tag == rawTag {
		panic("exchange: snapshot tag " + tag + " is reserved")
	}
	codecMu.Lock()
	defer codecMu.Unlock()
	if _, dup := codecByTag[tag]; dup {
		panic("exchange: snapshot tag " + tag + " registered twice")
	}
	if _, dup := codecByType[typ]; dup {
		panic("exchange: snapshot type " + typ.String() + " registered twice")
	}
	c := &snapshotCodec{tag: tag, typ: typ,
		encode: func(v any) (any, error) { return encode(v.(T)) },
		decode: func(data any) (any, error) { return decode(data) },
	}
	codecByType[typ], codecByTag[tag] = c, c
}

// A time.Time (a component's timestamp) comes back as the same instant, in
// UTC, to the nanosecond.
func init() {
	RegisterSnapshotCodec("time", func(t time.Time) (any, error) {
		return t.UTC().Format(time.RFC3339Nano), nil
	}, func(data any) (time.Time, error) {
		s, _ := data.(string)
		return time.Parse(time.RFC3339Nano, s)
	})
}

// maxDepth bounds how deep a snapshot's values may nest.
const maxDepth = 256

// tagValue is v ready for json.Marshal, with the values JSON cannot tell apart
// tagged; at names where v is (body.items[3]) for the error about a value
// with no encoding.
func tagValue(v any, at string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("snapshot: %s nests deeper than %d levels", at, maxDepth)
	}
	switch x := v.(type) {
	case nil, bool, string, json.Number,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32:
		return x, nil
	case float64:
		if x != x || x > 1.7976931348623157e308 || x < -1.7976931348623157e308 {
			return nil, fmt.Errorf("snapshot: %s is %v, which JSON cannot hold", at, x)
		}
		return x, nil
	case []byte:
		return map[string]any{tagMark + bytesTag: base64.StdEncoding.EncodeToString(x)}, nil
	case json.RawMessage:
		if !json.Valid(x) {
			return nil, fmt.Errorf("snapshot: %s is raw JSON that is not valid JSON", at)
		}
		return map[string]any{tagMark + rawTag: string(x)}, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			t, err := tagValue(e, at+"."+k, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = t
		}
		if len(x) == 1 {
			for k := range x {
				if strings.HasPrefix(k, tagMark) {
					return map[string]any{tagMark + mapTag: out}, nil
				}
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			t, err := tagValue(e, fmt.Sprintf("%s[%d]", at, i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = t
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, nil
	}
	codecMu.RLock()
	c := codecByType[reflect.TypeOf(v)]
	codecMu.RUnlock()
	if c == nil {
		return nil, fmt.Errorf("snapshot: %s is a %T, which a checkpoint cannot keep (keep plain data: strings, numbers, lists, maps, bytes)", at, v)
	}
	data, err := c.encode(v)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %s (%T): %w", at, v, err)
	}
	// Raw JSON from the codec (RegisterSnapshotType) goes in as it is; other
	// data is encoded like a body.
	if _, raw := data.(json.RawMessage); !raw {
		if data, err = tagValue(data, at, depth+1); err != nil {
			return nil, err
		}
	}
	return map[string]any{tagMark + c.tag: data}, nil
}

// untag is what tagValue made, decoded with numbers as json.Number, back as the
// values it tagged.
func untag(v any, at string) (any, error) {
	switch x := v.(type) {
	case json.Number:
		var n any = x
		if err := jsonnum.Normalize(&n); err != nil {
			return nil, fmt.Errorf("snapshot: %s: %w", at, err)
		}
		return n, nil
	case map[string]any:
		if len(x) == 1 {
			for k, e := range x {
				if tag, ok := strings.CutPrefix(k, tagMark); ok {
					return untagged(tag, e, at)
				}
			}
		}
		for k, e := range x {
			u, err := untag(e, at+"."+k)
			if err != nil {
				return nil, err
			}
			x[k] = u
		}
	case []any:
		for i, e := range x {
			u, err := untag(e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			x[i] = u
		}
	}
	return v, nil
}

// untagged decodes the value tag tagged.
func untagged(tag string, v any, at string) (any, error) {
	switch tag {
	case bytesTag:
		s, _ := v.(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("snapshot: %s: bad bytes: %w", at, err)
		}
		return b, nil
	case rawTag:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("snapshot: %s: tagged raw JSON is no string", at)
		}
		return json.RawMessage(s), nil
	case mapTag:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("snapshot: %s: a tagged map is no object", at)
		}
		for k, e := range m {
			u, err := untag(e, at+"."+k)
			if err != nil {
				return nil, err
			}
			m[k] = u
		}
		return m, nil
	}
	codecMu.RLock()
	c := codecByTag[tag]
	codecMu.RUnlock()
	if c == nil {
		return nil, fmt.Errorf("snapshot: %s holds a value of type %q, which this build does not know", at, tag)
	}
	data, err := untag(v, at)
	if err != nil {
		return nil, err
	}
	out, err := c.decode(data)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %s (%s): %w", at, tag, err)
	}
	return out, nil
}
