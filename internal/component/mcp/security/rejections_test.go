package security

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRejectionsCountedByReason(t *testing.T) {
	shared := &Rejections{}
	cfg := Config{APIKeys: []string{"k1"}, ServerID: "s", Logger: slog.New(slog.DiscardHandler), Rejections: shared}
	send := func(st *Stack, key string) int {
		h := st.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader("{}"))
		if key != "" {
			r.Header.Set("X-Api-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	first, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if c := send(first, ""); c != http.StatusUnauthorized {
		t.Fatalf("no key: %d", c)
	}
	if c := send(first, "k1"); c != http.StatusOK {
		t.Fatalf("good key: %d", c)
	}
	// A second stack of the same server (a restart) keeps counting.
	second, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	send(second, "bad")
	send(second, "bad")

	want := []RejectionCount{{Reason: "invalid api key", Count: 2}, {Reason: "missing credentials", Count: 1}}
	got := second.Rejections()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("rejections %+v, want %+v", got, want)
	}

	// Without a shared counter each stack counts its own.
	own, err := New(Config{APIKeys: []string{"k1"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	send(own, "")
	if got := own.Rejections(); len(got) != 1 || got[0].Count != 1 {
		t.Errorf("own rejections %+v", got)
	}
}

func TestReasonLabelDropsDetail(t *testing.T) {
	for in, want := range map[string]string{
		"invalid token: token is expired": "invalid token",
		"rate limit exceeded":             "rate limit exceeded",
	} {
		if got := reasonLabel(in); got != want {
			t.Errorf("reasonLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
