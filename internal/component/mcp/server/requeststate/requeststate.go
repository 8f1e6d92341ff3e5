// Package requeststate seals the requestState of MCP 2026-07-28 input-required
// results (SEP-2322): the opaque string a server hands the client with its
// questions and gets back, unchanged, with the answers.
//
// A state is self-contained, so that any replica sharing the key can continue the
// call: AES-256-GCM over a small versioned JSON payload that binds it to one server,
// one request (method, target, SHA-256 of the canonical arguments) and one principal,
// and carries the answers so far and a checkpoint to resume from. It expires (10
// minutes by default) and is single-use: its id is remembered as used until it
// expires ([UsedStore]), so a replayed state is refused.
//
// Every refusal is an *[Error] saying what is wrong and what the client should do.
package requeststate

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Defaults.
const (
	DefaultTTL = 10 * time.Minute
	// DefaultMaxBytes bounds a sealed state (the base64 text the client echoes).
	DefaultMaxBytes = 256 << 10
	// KeySize is the size of an AES-256 key.
	KeySize = 32
)

// version is the first byte of every sealed state; a new payload layout gets a new one.
const version byte = 1

// Binding is what a state belongs to: a retry must match it exactly.
type Binding struct {
	Server    string // the MCP server's name
	Method    string // tools/call, prompts/get, resources/read
	Target    string // the tool or prompt name, the resource URI
	Arguments []byte // the request's arguments as JSON (hashed canonically)
	Principal string // the authenticated caller (API key id, OAuth subject) or ""
}

// Checkpoint is where a workflow stopped to ask: the index of its top-level step
// that asked and the exchange before that step, encoded by the caller.
type Checkpoint struct {
	Step     int             `json:"step"`
	Name     string          `json:"name,omitempty"` // the step's name, checked on resume
	Snapshot json.RawMessage `json:"snap"`
}

// State is an opened, verified state.
type State struct {
	ID         string                     // unique per issued state; single-use
	Answers    map[string]json.RawMessage // by question id
	Checkpoint *Checkpoint                // nil: start from the first step
	Expires    time.Time
}

// payload is what is sealed. Short keys keep the state small.
type payload struct {
	Server     string                     `json:"srv"`
	Method     string                     `json:"m"`
	Target     string                     `json:"t"`
	Args       string                     `json:"args"` // hex SHA-256 of the canonical arguments
	Principal  string                     `json:"sub,omitempty"`
	Issued     int64                      `json:"iat"`
	Expires    int64                      `json:"exp"`
	ID         string                     `json:"n"`
	Answers    map[string]json.RawMessage `json:"a,omitempty"`
	Checkpoint *Checkpoint                `json:"cp,omitempty"`
}

// Reason classifies a refusal.
type Reason string

// The refusals.
const (
	Malformed      Reason = "malformed"       // not a state this server issued (tampered, truncated, other key)
	TooLarge       Reason = "too large"       // larger than the limit
	Expired        Reason = "expired"         // past its expiry
	OtherPrincipal Reason = "other principal" // issued to another caller
	OtherRequest   Reason = "other request"   // issued for another server, tool, prompt, resource or arguments
	Replayed       Reason = "replayed"        // already used once
	Unavailable    Reason = "unavailable"     // the used-state store could not be asked
)

// Error is a refused state.
type Error struct {
	Reason Reason
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

const retryHint = "; call the tool again without requestState (and without inputResponses) to start over"

func refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Msg: "requestState " + fmt.Sprintf(format, args...) + retryHint}
}

// UsedStore remembers the ids of used states until they expire.
type UsedStore interface {
	// Use marks id used until until and reports whether it was unused before.
	Use(ctx context.Context, id string, until time.Time) (fresh bool, err error)
}

// Options configure a [Sealer]; the zero value of each field means its default.
type Options struct {
	TTL      time.Duration // DefaultTTL
	MaxBytes int           // DefaultMaxBytes
	Used     UsedStore     // an in-process LRU (NewMemoryStore(0))
	Now      func() time.Time
}

// Sealer seals and opens the states of one server.
type Sealer struct {
	aead     cipher.AEAD
	ttl      time.Duration
	maxBytes int
	used     UsedStore
	now      func() time.Time
}

// New returns a Sealer with key (KeySize bytes).
func New(key []byte, o Options) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("a request state key has %d bytes, not %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s := &Sealer{aead: aead, ttl: o.TTL, maxBytes: o.MaxBytes, used: o.Used, now: o.Now}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxBytes
	}
	if s.used == nil {
		s.used = NewMemoryStore(0)
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// RandomKey returns a new random key, for a server configured without one.
func RandomKey() []byte {
	k := make([]byte, KeySize)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+)
	return k
}

// ParseKey reads a key written as base64 (standard or URL alphabet, padded or
// not) or hex; it must decode to KeySize bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, fmt.Errorf("the key decodes to %d bytes, not %d", len(k), KeySize)
			}
			return k, nil
		}
	}
	return nil, fmt.Errorf("the key is neither %d bytes of base64 nor %d hex digits", KeySize, 2*KeySize)
}

// ArgumentsHash is the hex SHA-256 of args in canonical form: decoded and encoded
// again (object keys sorted, no spaces), so that the same arguments written
// differently hash the same. Absent, null and {} are the same (no arguments).
func ArgumentsHash(args []byte) (string, error) {
	canon := []byte("{}")
	if t := bytes.TrimSpace(args); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return "", fmt.Errorf("arguments are not JSON: %w", err)
		}
		if m, ok := v.(map[string]any); !ok || len(m) > 0 {
			var err error
			if canon, err = json.Marshal(v); err != nil {
				return "", err
			}
		}
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// ErrTooLarge is the error of Seal for a state beyond the size limit.
var ErrTooLarge = errors.New("the answers and checkpoint of this call are too large to hand to the client as requestState")

// Seal issues a new state for b holding answers and cp.
func (s *Sealer) Seal(b Binding, answers map[string]json.RawMessage, cp *Checkpoint) (string, error) {
	h, err := ArgumentsHash(b.Arguments)
	if err != nil {
		return "", err
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	now := s.now()
	p := payload{Server: b.Server, Method: b.Method, Target: b.Target, Args: h, Principal: b.Principal,
		Issued: now.Unix(), Expires: now.Add(s.ttl).Unix(), ID: base64.RawURLEncoding.EncodeToString(id),
		Answers: answers, Checkpoint: cp}
	plain, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("request state: %w", err)
	}
	// Checked before sealing: the sealed text is about 4/3 of this.
	if base64.RawURLEncoding.EncodedLen(1+s.aead.NonceSize()+len(plain)+s.aead.Overhead()) > s.maxBytes {
		return "", ErrTooLarge
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := make([]byte, 0, 1+len(nonce)+len(plain)+s.aead.Overhead())
	out = append(out, version)
	out = append(out, nonce...)
	out = s.aead.Seal(out, nonce, plain, []byte{version})
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// Open verifies token for b and marks it used. Any refusal is an *Error.
func (s *Sealer) Open(ctx context.Context, token string, b Binding) (*State, error) {
	// Refused before any decoding or decryption: the size is the attacker's choice.
	if len(token) > s.maxBytes {
		return nil, refuse(TooLarge, "is larger than this server issues (%d bytes, at most %d)", len(token), s.maxBytes)
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < 1+s.aead.NonceSize()+s.aead.Overhead() || raw[0] != version {
		return nil, refuse(Malformed, "is not one this server issued (it is malformed or truncated)")
	}
	ns := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[1:1+ns], raw[1+ns:], []byte{version})
	if err != nil {
		return nil, refuse(Malformed, "failed its integrity check (it was changed, or sealed with another key: replicas need one shared request_state key)")
	}
	var p payload
	if err := json.Unmarshal(plain, &p); err != nil || p.ID == "" {
		return nil, refuse(Malformed, "is not one this server issued (unreadable payload)")
	}
	now := s.now()
	expires := time.Unix(p.Expires, 0)
	if !now.Before(expires) {
		return nil, refuse(Expired, "expired at %s (states live %s)", expires.UTC().Format(time.RFC3339), s.ttl)
	}
	if p.Principal != b.Principal {
		return nil, refuse(OtherPrincipal, "was issued to another caller")
	}
	h, err := ArgumentsHash(b.Arguments)
	if err != nil {
		return nil, err
	}
	switch {
	case p.Server != b.Server:
		return nil, refuse(OtherRequest, "was issued by another server")
	case p.Method != b.Method || p.Target != b.Target:
		return nil, refuse(OtherRequest, "was issued for %s %q, not for %s %q", p.Method, p.Target, b.Method, b.Target)
	case p.Args != h:
		return nil, refuse(OtherRequest, "was issued for other arguments (the retry must send the same arguments)")
	}
	fresh, err := s.used.Use(ctx, p.ID, expires)
	if err != nil {
		return nil, &Error{Reason: Unavailable, Msg: "requestState could not be checked against replays (" + err.Error() + "); try the retry again"}
	}
	if !fresh {
		return nil, &Error{Reason: Replayed, Msg: "requestState already used: each one is good for one retry" + retryHint}
	}
	return &State{ID: p.ID, Answers: p.Answers, Checkpoint: p.Checkpoint, Expires: expires}, nil
}

// TTL is how long the states of s live.
func (s *Sealer) TTL() time.Duration { return s.ttl }
