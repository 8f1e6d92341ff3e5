package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A body that gives more than its declared Content-Length (net/http never lets
// one, but a handler in front or a test may hand such a request on) is still
// held to the body limit, and answered 413.
func TestBodyOutgrowingItsDeclaredLengthIsStillLimited(t *testing.T) {
	t.Parallel()
	h := NewStreamableHandler(echoServer(t), &Options{MaxRequestBodyBytes: 512, Stateless: true})
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 600) + `"}}`
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.ContentLength = 100 // less than it carries, within the limit
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413 (%s)", w.Code, w.Body)
	}
}

// readBody of a declared length within the limit needs no MaxBytesReader and
// reads the body in one allocation.
func TestReadBodyOfDeclaredLength(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	n := testing.AllocsPerRun(100, func() {
		b, err := readBody(strings.NewReader(body), int64(len(body)), 512)
		if err != nil || string(b) != body {
			t.Fatalf("readBody: %q, %v", b, err)
		}
	})
	if n > 2 { // the buffer, and the strings.Reader of the test
		t.Errorf("readBody allocates %v times, want at most 2", n)
	}
	if _, err := readBody(strings.NewReader(body+body), int64(len(body)), int64(len(body))+1); err == nil {
		t.Error("readBody took a body beyond its limit")
	}
}
