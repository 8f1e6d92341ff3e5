package capture

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/plainjson"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/exchange"
)

// Mask replaces a hidden value in a capture.
const Mask = "[redacted]"

const (
	maxHeaders     = 64
	maxHeaderValue = 1 << 10
	maxDepth       = 32
)

// secretParts are the pieces of a header or field name that mark its value
// as a secret wherever they appear in the name (X-Auth-Token, db_password).
var secretParts = []string{"token", "secret", "password", "passwd", "apikey", "api-key", "api_key", "credential", "private"}

// secretNames are whole names that hold credentials.
var secretNames = map[string]bool{"authorization": true, "proxy-authorization": true, "cookie": true,
	"set-cookie": true, "x-api-key": true, "key": true, "auth": true, "session": true, "sessionid": true}

// IsSecretName reports whether a header or body field called name holds a
// secret by its name alone.
func IsSecretName(name string) bool {
	n := strings.ToLower(name)
	if secretNames[n] {
		return true
	}
	for _, p := range secretParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

type redactor struct {
	extra map[string]bool
}

func newRedactor(fields []string) redactor {
	r := redactor{extra: map[string]bool{}}
	for _, f := range fields {
		r.extra[strings.ToLower(f)] = true
	}
	return r
}

func (r redactor) secret(name string) bool {
	return IsSecretName(name) || r.extra[strings.ToLower(name)]
}

// text hides the process's configured secrets and URL credentials in s.
func (r redactor) text(s string) string { return redact.Text(s) }

// snapshotInto writes ex's headers and body now into s, as bounded, redacted
// text. It reads the exchange without changing it and copies what it keeps.
// It and its helpers keep small frames, and write into s rather than return a
// Snapshot: an exchange's and a step's capture run at the bottom of a tool
// call's stack, which a connection's goroutine keeps at the size its deepest
// request took it to.
func (r redactor) snapshotInto(s *Snapshot, ex *exchange.Exchange, bodyLimit int) {
	msg := ex.In()
	if h := msg.Headers(); len(h) > 0 {
		r.headers(s, h)
	}
	r.body(s, msg.Body(), bodyLimit)
	s.Redacted = s.Redacted || s.BodyRedacted
	if err := ex.Exception(); err != nil {
		s.Failed = r.text(err.Error())
	}
}

// headers writes h, sorted, bounded and redacted, into s.
func (r redactor) headers(s *Snapshot, h map[string]any) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > maxHeaders {
		s.HeadersNotShown = len(names) - maxHeaders
		names = names[:maxHeaders]
	}
	s.Headers = make([]Header, 0, len(names))
	for _, k := range names {
		hd := Header{Name: k}
		if r.secret(k) {
			hd.Value, hd.Redacted = Mask, true
			s.Redacted = true
		} else {
			v := r.text(exchange.Stringify(h[k]))
			if len(v) > maxHeaderValue {
				v, hd.Truncated = console.Cut(v, maxHeaderValue), true
			}
			hd.Value = v
		}
		s.Headers = append(s.Headers, hd)
	}
}

// body writes body, bounded and redacted, into s.
func (r redactor) body(s *Snapshot, body any, bodyLimit int) {
	w := bodyWriter{r: r, limit: bodyLimit}
	s.BodyType = kindOf(body)
	switch b := body.(type) {
	case nil:
	case string:
		w.raw(b)
	case []byte:
		if utf8.Valid(b) {
			w.raw(string(b))
		} else {
			w.raw("base64:" + base64.StdEncoding.EncodeToString(b[:min(len(b), bodyLimit)]))
			w.full = len(b)
			w.truncated = len(b) > bodyLimit
		}
	default:
		w.value(b, 0)
	}
	s.Body = r.text(w.b.String())
	s.BodyBytes = w.full
	s.Truncated = w.truncated
	s.BodyRedacted = w.redacted || s.Body != w.b.String()
}

// bodyWriter writes a body as JSON text up to limit bytes; past it, it only
// counts, so a huge body costs a walk bounded by the limit and depth, not a
// full encoding.
type bodyWriter struct {
	r         redactor
	limit     int
	b         strings.Builder
	full      int
	truncated bool
	redacted  bool
}

func (w *bodyWriter) raw(s string) {
	w.full += len(s)
	if w.truncated {
		return
	}
	room := w.limit - w.b.Len()
	if len(s) > room {
		w.b.WriteString(console.Cut(s, room))
		w.truncated = true
		return
	}
	w.b.WriteString(s)
}

func (w *bodyWriter) value(v any, depth int) {
	if w.truncated {
		// Stop the walk: the text is full. full then counts what was seen.
		return
	}
	if depth > maxDepth {
		w.raw(`"…"`)
		w.truncated = true
		return
	}
	switch x := v.(type) {
	case nil:
		w.raw("null")
	case string:
		w.str(x)
	case bool, int, int64, float64, []byte:
		w.scalar(x)
	case map[string]any:
		w.object(x, depth)
	case []any:
		w.raw("[")
		for i, e := range x {
			if i > 0 {
				w.raw(",")
			}
			w.value(e, depth+1)
		}
		w.raw("]")
	default:
		w.other(x, depth)
	}
}

// object, scalar, other and str are functions of their own so that value, which
// recurses once per level of a body, keeps a small frame: the capture of a
// step's body runs at the bottom of a tool call's stack, which a connection's
// goroutine keeps at the size its deepest request took it to.
func (w *bodyWriter) object(x map[string]any, depth int) {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	w.raw("{")
	for i, k := range keys {
		if i > 0 {
			w.raw(",")
		}
		w.str(k)
		w.raw(":")
		if w.r.secret(k) {
			w.str(Mask)
			w.redacted = true
			continue
		}
		w.value(x[k], depth+1)
	}
	w.raw("}")
}

// scalar writes a boolean, a number or bytes.
func (w *bodyWriter) scalar(v any) {
	switch x := v.(type) {
	case bool:
		w.raw(strconv.FormatBool(x))
	case int:
		w.raw(strconv.Itoa(x))
	case int64:
		w.raw(strconv.FormatInt(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			w.str(strconv.FormatFloat(x, 'g', -1, 64))
			return
		}
		w.raw(strconv.FormatFloat(x, 'g', -1, 64))
	case []byte:
		w.str("base64:" + base64.StdEncoding.EncodeToString(x[:min(len(x), w.limit)]))
	}
}

// other writes a value of another type (a struct a component made): its JSON,
// with secret fields hidden by decoding it into the generic form first.
func (w *bodyWriter) other(x any, depth int) {
	b, err := json.Marshal(x)
	if err != nil {
		w.str(fmt.Sprintf("(%T: not JSON)", x))
		return
	}
	var g any
	if json.Unmarshal(b, &g) != nil {
		w.str(fmt.Sprintf("(%T: not JSON)", x))
		return
	}
	w.value(g, depth+1)
}

// str writes s as a JSON string. Only the part that can still fit is
// encoded: a megabyte string in a body costs its first few kilobytes.
func (w *bodyWriter) str(s string) {
	room := w.limit - w.b.Len()
	if w.truncated || room <= 0 {
		w.full += len(s) + 2
		w.truncated = true
		return
	}
	if len(s) > room {
		w.raw(string(plainjson.AppendString(nil, console.Cut(s, room))))
		// What was not encoded is counted, and the text is over the limit.
		w.full += len(s) - room
		w.truncated = true
		return
	}
	// As json.Marshal writes a string, without its reflection (a deep stack).
	w.raw(string(plainjson.AppendString(nil, s)))
}

// kindOf names a body's kind for people ("" for none).
func kindOf(body any) string {
	switch body.(type) {
	case nil:
		return ""
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "text"
	case []byte:
		return "bytes"
	case bool:
		return "boolean"
	case int, int64, float64:
		return "number"
	}
	return fmt.Sprintf("%T", body)
}
