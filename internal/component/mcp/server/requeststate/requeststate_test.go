package requeststate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

func newSealer(t *testing.T, key []byte, now *time.Time) *Sealer {
	t.Helper()
	s, err := New(key, Options{Now: func() time.Time { return *now }, MaxBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var bind = Binding{Server: "srv", Method: "tools/call", Target: "greet", Arguments: []byte(`{"b":1,"a":"x"}`), Principal: "key-1"}

func reason(t *testing.T, err error) Reason {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error, got %v", err)
	}
	if !strings.Contains(e.Msg, "requestState") {
		t.Errorf("message %q does not name requestState", e.Msg)
	}
	return e.Reason
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s := newSealer(t, RandomKey(), &now)
	answers := map[string]json.RawMessage{"user_name": json.RawMessage(`{"action":"accept","content":{"name":"Alice"}}`)}
	tok, err := s.Seal(bind, answers, &Checkpoint{Step: 2, Snapshot: json.RawMessage(`{"body":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	// The same arguments written differently open it too.
	b := bind
	b.Arguments = []byte(` { "a": "x", "b": 1 } `)
	st, err := s.Open(context.Background(), tok, b)
	if err != nil {
		t.Fatal(err)
	}
	if string(st.Answers["user_name"]) != string(answers["user_name"]) || st.Checkpoint == nil || st.Checkpoint.Step != 2 {
		t.Fatalf("opened %+v", st)
	}
	if !st.Expires.Equal(now.Add(DefaultTTL)) {
		t.Errorf("expires %v", st.Expires)
	}
	// Two seals of the same content differ (nonce, id).
	tok2, _ := s.Seal(bind, answers, nil)
	if tok2 == tok {
		t.Error("two states are equal")
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	key := RandomKey()
	s := newSealer(t, key, &now)
	ctx := context.Background()
	seal := func() string {
		tok, err := s.Seal(bind, map[string]json.RawMessage{"q": json.RawMessage(`{"roots":[]}`)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	flip := func(tok string, i int) string {
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		raw[i] ^= 1
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	other := func(f func(*Binding)) Binding { b := bind; f(&b); return b }
	cases := []struct {
		name string
		tok  func() string
		b    Binding
		want Reason
	}{
		{"tampered byte", func() string { tok := seal(); return flip(tok, len(tok)/2*3/4) }, bind, Malformed},
		{"tampered version", func() string { return flip(seal(), 0) }, bind, Malformed},
		{"suffix", func() string { return seal() + "-TAMPERED" }, bind, Malformed},
		{"truncated", func() string { tok := seal(); return tok[:len(tok)-5] }, bind, Malformed},
		{"empty-ish", func() string { return "AQ" }, bind, Malformed},
		{"not base64", func() string { return "%%%" }, bind, Malformed},
		{"wrong key", func() string {
			o := newSealer(t, RandomKey(), &now)
			tok, _ := o.Seal(bind, nil, nil)
			return tok
		}, bind, Malformed},
		{"oversize", func() string { return strings.Repeat("A", 5000) }, bind, TooLarge},
		{"other principal", seal, other(func(b *Binding) { b.Principal = "key-2" }), OtherPrincipal},
		{"no principal", seal, other(func(b *Binding) { b.Principal = "" }), OtherPrincipal},
		{"other tool", seal, other(func(b *Binding) { b.Target = "other" }), OtherRequest},
		{"other method", seal, other(func(b *Binding) { b.Method = "prompts/get" }), OtherRequest},
		{"other server", seal, other(func(b *Binding) { b.Server = "srv2" }), OtherRequest},
		{"other arguments", seal, other(func(b *Binding) { b.Arguments = []byte(`{"a":"y","b":1}`) }), OtherRequest},
	}
	for _, c := range cases {
		st, err := s.Open(ctx, c.tok(), c.b)
		if err == nil {
			t.Errorf("%s: opened %+v", c.name, st)
			continue
		}
		if got := reason(t, err); got != c.want {
			t.Errorf("%s: reason %q, want %q (%v)", c.name, got, c.want, err)
		}
	}
}

func TestExpiredAndReplayed(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s := newSealer(t, RandomKey(), &now)
	ctx := context.Background()
	tok, _ := s.Seal(bind, nil, nil)
	if _, err := s.Open(ctx, tok, bind); err != nil {
		t.Fatal(err)
	}
	_, err := s.Open(ctx, tok, bind)
	if reason(t, err) != Replayed || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("replay: %v", err)
	}
	tok, _ = s.Seal(bind, nil, nil)
	now = now.Add(DefaultTTL)
	if _, err := s.Open(ctx, tok, bind); reason(t, err) != Expired {
		t.Fatalf("expired: %v", err)
	}
}

func TestSealTooLarge(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := newSealer(t, RandomKey(), &now)
	big := map[string]json.RawMessage{"q": json.RawMessage(`"` + strings.Repeat("x", 5000) + `"`)}
	if _, err := s.Seal(bind, big, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	k := RandomKey()
	for _, s := range []string{base64.StdEncoding.EncodeToString(k), base64.RawURLEncoding.EncodeToString(k), strings.ToUpper(hexOf(k))} {
		got, err := ParseKey(s)
		if err != nil || string(got) != string(k) {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, bad := range []string{"", "short", base64.StdEncoding.EncodeToString(k[:16]), strings.Repeat("z", 64)} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if _, err := New(k[:16], Options{}); err == nil {
		t.Error("a 16-byte key was accepted")
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, x := range b {
		out = append(out, digits[x>>4], digits[x&15])
	}
	return string(out)
}

func TestMemoryStoreBounded(t *testing.T) {
	t.Parallel()
	m := NewMemoryStore(3)
	now := time.Unix(100, 0)
	m.now = func() time.Time { return now }
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c", "d"} {
		if fresh, _ := m.Use(ctx, id, now.Add(time.Minute)); !fresh {
			t.Fatalf("%s not fresh", id)
		}
	}
	if m.Len() != 3 {
		t.Fatalf("len %d", m.Len())
	}
	if fresh, _ := m.Use(ctx, "d", now.Add(time.Minute)); fresh {
		t.Fatal("d reused")
	}
	now = now.Add(2 * time.Minute)
	if fresh, _ := m.Use(ctx, "e", now.Add(time.Minute)); !fresh || m.Len() != 1 {
		t.Fatalf("expired entries kept: len %d", m.Len())
	}
}

func TestRedisStoreSharedAcrossSealers(t *testing.T) {
	t.Parallel()
	addr := testtools.StartRedis(t)
	key := RandomKey()
	mk := func() *Sealer {
		st, err := NewRedisStore(addr.URL, "test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		s, err := New(key, Options{Used: st})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := mk(), mk()
	tok, _ := a.Seal(bind, nil, nil)
	if _, err := b.Open(context.Background(), tok, bind); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Open(context.Background(), tok, bind); reason(t, err) != Replayed {
		t.Fatalf("replay on another replica: %v", err)
	}
	if err := CheckStoreURL("http://x"); err == nil {
		t.Error("http:// store accepted")
	}
}
