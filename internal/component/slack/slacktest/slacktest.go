// Package slacktest is a fake Slack for tests: an httptest server that speaks the
// wire format of the Web API method chat.postMessage (form or JSON bodies, the token
// in the form or as a Bearer header, {"ok":true,…} / {"ok":false,"error":…} answers)
// and of incoming webhooks (a JSON body, "ok" or an error code as text), and records
// every message it accepted.
//
//	fake := slacktest.NewServer(t, "xoxb-test")
//	comp := slack.New(&slack.Options{APIURL: fake.APIURL()})
//	…
//	m := fake.Next(t) // the first message posted
//
// A Fault returned by [Server.Before] answers a request as Slack does when something
// is wrong (ok:false with a code, 429 with Retry-After). Safe for concurrent use.
package slacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is one message the fake received.
type Message struct {
	// Via is "api" (chat.postMessage) or "webhook".
	Via     string
	Channel string
	Text    string
	// Blocks are the Block Kit blocks, decoded from JSON; nil without blocks.
	Blocks    []any
	Username  string
	IconEmoji string
	IconURL   string
	ThreadTs  string
	// Ts is the timestamp the fake gave the message (Web API only).
	Ts string
}

// Fault is an answer for a request that Slack refuses.
type Fault struct {
	// Status is the HTTP status; 0 means 200 for the Web API (which answers errors
	// with 200 and ok:false) and 400 for a webhook.
	Status int
	// RetryAfter, when set, is sent as the Retry-After header (with Status 429).
	RetryAfter string
	// Error is Slack's error code (channel_not_found, invalid_payload …).
	Error string
}

// RateLimited is the Fault of a 429 with Retry-After seconds.
func RateLimited(seconds int) *Fault {
	return &Fault{Status: http.StatusTooManyRequests, RetryAfter: strconv.Itoa(seconds), Error: "ratelimited"}
}

// Server is the fake. Set its fields before the first request.
type Server struct {
	// Token is the bot token the Web API accepts; other tokens get invalid_auth.
	Token string
	// Channels, when not nil, are the channels that exist (names or IDs); others get
	// channel_not_found.
	Channels []string
	// Before, when set, sees every well-formed message before it is accepted; a
	// non-nil Fault answers the request with it instead (the message is then not
	// recorded). ctx is the request's context.
	Before func(ctx context.Context, m Message) *Fault

	srv      *httptest.Server
	received chan Message
	mu       sync.Mutex
	all      []Message
	requests int
	seq      int
}

// WebhookPath is the path of the fake's incoming webhook.
const WebhookPath = "/services/T0000000/B0000000/fakewebhooksecret"

// NewServer starts a fake Slack accepting token and closes it when the test ends.
func NewServer(t testing.TB, token string) *Server {
	s := &Server{Token: token, received: make(chan Message, 1024)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat.postMessage", s.postMessage)
	mux.HandleFunc("POST "+WebhookPath, s.webhook)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.count()
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error": "unknown_method"})
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// APIURL is the base URL of the fake Web API (the apiUrl option, slack.Options.APIURL).
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// WebhookURL is the URL of the fake's incoming webhook.
func (s *Server) WebhookURL() string { return s.srv.URL + WebhookPath }

// Close shuts the fake down before the test ends (a Slack that is gone).
func (s *Server) Close() { s.srv.Close() }

// Requests counts every request received, refused ones included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Messages returns the messages accepted so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.all...)
}

// Received delivers each accepted message, in order.
func (s *Server) Received() <-chan Message { return s.received }

// Next waits (up to 30 s) for the next accepted message.
func (s *Server) Next(t testing.TB) Message {
	t.Helper()
	select {
	case m := <-s.received:
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("slacktest: no message arrived within 30s")
		return Message{}
	}
}

func (s *Server) count() {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
}

func (s *Server) record(m Message) Message {
	s.mu.Lock()
	if m.Via == "api" {
		s.seq++
		m.Ts = fmt.Sprintf("1700000000.%06d", s.seq)
	}
	s.all = append(s.all, m)
	s.mu.Unlock()
	select {
	case s.received <- m:
	default: // nobody reads the channel: Messages still has it
	}
	return m
}

// postMessage is chat.postMessage: a form (as slack-go sends it) or a JSON body.
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	s.count()
	fields := map[string]any{}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	ct := r.Header.Get("Content-Type")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	switch {
	case strings.HasPrefix(ct, "application/json"):
		if err := json.Unmarshal(body, &fields); err != nil {
			writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_json"})
			return
		}
	case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_form_data"})
			return
		}
		for k := range vals {
			fields[k] = vals.Get(k)
		}
		if t := vals.Get("token"); t != "" {
			token = t
		}
		if b := vals.Get("blocks"); b != "" {
			var blocks any
			if err := json.Unmarshal([]byte(b), &blocks); err != nil {
				writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_blocks_format"})
				return
			}
			fields["blocks"] = blocks
		}
	default:
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	if token == "" {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "not_authed"})
		return
	}
	if token != s.Token {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	m := messageFrom("api", fields)
	if m.Channel == "" || !s.exists(m.Channel) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "channel_not_found"})
		return
	}
	if _, isList := fields["blocks"].([]any); fields["blocks"] != nil && !isList {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_blocks_format"})
		return
	}
	if m.Text == "" && len(m.Blocks) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "no_text"})
		return
	}
	if f := s.before(r.Context(), m); f != nil {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		status := f.Status
		if status == 0 {
			status = http.StatusOK
		}
		writeJSON(w, status, map[string]any{"ok": false, "error": f.Error})
		return
	}
	m = s.record(m)
	id := channelID(m.Channel)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": id, "ts": m.Ts,
		"message": map[string]any{"type": "message", "text": m.Text, "ts": m.Ts, "bot_id": "B0FAKE"}})
}

// webhook is an incoming webhook: a JSON body; "ok" or an error code as text.
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	s.count()
	fields := map[string]any{}
	if err := json.NewDecoder(r.Body).Decode(&fields); err != nil {
		writeText(w, http.StatusBadRequest, "invalid_payload")
		return
	}
	m := messageFrom("webhook", fields)
	if m.Text == "" && len(m.Blocks) == 0 {
		writeText(w, http.StatusBadRequest, "no_text")
		return
	}
	if f := s.before(r.Context(), m); f != nil {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		status := f.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
		writeText(w, status, f.Error)
		return
	}
	s.record(m)
	writeText(w, http.StatusOK, "ok")
}

func (s *Server) before(ctx context.Context, m Message) *Fault {
	if s.Before == nil {
		return nil
	}
	return s.Before(ctx, m)
}

func (s *Server) exists(ch string) bool {
	if s.Channels == nil {
		return true
	}
	for _, c := range s.Channels {
		if c == ch {
			return true
		}
	}
	return false
}

func messageFrom(via string, f map[string]any) Message {
	str := func(k string) string { v, _ := f[k].(string); return v }
	blocks, _ := f["blocks"].([]any)
	return Message{Via: via, Channel: str("channel"), Text: str("text"), Blocks: blocks, Username: str("username"),
		IconEmoji: str("icon_emoji"), IconURL: str("icon_url"), ThreadTs: str("thread_ts")}
}

// channelID is the fake's stable ID for a channel name (IDs map to themselves).
func channelID(ch string) string {
	if len(ch) > 1 && (ch[0] == 'C' || ch[0] == 'G') && strings.ToUpper(ch) == ch {
		return ch
	}
	return fmt.Sprintf("C%08X", crc32.ChecksumIEEE([]byte(strings.TrimPrefix(ch, "#"))))
}

// ChannelID is the ID the fake answers for a channel name.
func ChannelID(name string) string { return channelID(name) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeText(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, s)
}
