package transport

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/arvenza/helix/internal/component/mcp/internal/jsonscan"
)

// Refusals at the door: when admission control would refuse a POST anyway
// (every slot taken and the queue full), the POST is refused right after its
// body is read: the body is only scanned for its method and id, not parsed or
// checked, and the answer is pre-rendered. Under a CPU-bound overload a
// refusal is paid for with the CPU the admitted calls need (goodput at twice
// the capacity is at most (1 − 2r)/(1 − r) of it when a refusal costs r of a
// call). The connection is kept: closing it would make the client pay a new
// connection, and the server an accept, for every refusal after it.

// doorPrefix and doorSuffix surround the id of a door refusal: the same JSON-RPC
// answer refuseBusy writes.
var doorPrefix, doorSuffix = func() ([]byte, []byte) {
	e, err := json.Marshal(BusyError())
	if err != nil {
		panic(err)
	}
	return []byte(`{"jsonrpc":"2.0","id":`), append(append([]byte(`,"error":`), e...), '}')
}()

// The header values of a door refusal, built once (net/http does not change them).
var (
	doorContentType = []string{"application/json"}
	doorRetryAfter  = []string{strconv.Itoa(busyRetryAfter)}
)

// maxDoorID bounds the id a door refusal echoes (longer ones go the usual way).
const maxDoorID = 64

// doorCall reads body without parsing it and reports whether it is certainly
// one request that takes an admission slot (admissionCost): a JSON object with
// exactly one plain "method" that is not exempt and not a notification, and
// one id that is a plain integer or string, which it returns. Anything else
// (batches, escapes, repeated keys, a body that is not JSON) goes the usual way.
func doorCall(body []byte) (id []byte, ok bool) {
	defer func() {
		if recover() != nil { // jsonscan expects valid JSON: a broken body may run it past its end
			id, ok = nil, false
		}
	}()
	var method []byte
	v := jsonscan.Members(body, func(key, val []byte) jsonscan.Verdict {
		switch string(key) {
		case "method":
			if method != nil {
				return jsonscan.Unsure
			}
			m, plain := jsonscan.PlainString(val)
			if !plain {
				return jsonscan.Unsure
			}
			method = m
		case "id":
			if id != nil || !doorID(val) {
				return jsonscan.Unsure
			}
			id = val
		}
		return jsonscan.On
	})
	if v != jsonscan.On || method == nil || id == nil {
		return nil, false
	}
	switch m := string(method); {
	case m == "ping", m == "initialize", m == "server/discover", m == "tasks/cancel",
		strings.HasPrefix(m, "notifications/"):
		return nil, false
	}
	return id, true
}

// doorID reports whether raw is an id a door refusal may echo as it is: a
// plain string or an integer, short.
func doorID(raw []byte) bool {
	if len(raw) == 0 || len(raw) > maxDoorID {
		return false
	}
	if raw[0] == '"' {
		_, plain := jsonscan.PlainString(raw)
		return plain
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// refuseAtDoor writes the door refusal for id: 503, Retry-After and the
// JSON-RPC busy error, as refuseBusy does.
func refuseAtDoor(w http.ResponseWriter, id []byte) {
	h := w.Header()
	h["Content-Type"] = doorContentType
	h["Retry-After"] = doorRetryAfter
	out := make([]byte, 0, len(doorPrefix)+len(id)+len(doorSuffix))
	out = append(append(append(out, doorPrefix...), id...), doorSuffix...)
	h["Content-Length"] = []string{strconv.Itoa(len(out))}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(out)
}
