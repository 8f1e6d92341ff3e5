package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:9/x?appid=k3y&units=metric", "http://127.0.0.1:9/x?appid=***&units=***"},
		{"postgres://app:s3cret@db:5432/x?sslmode=disable", "postgres://app:***@db:5432/x?sslmode=***"},
		{"https://ghp_token@github.com/o/r", "https://***@github.com/o/r"},
		{"https://u:p@ss@host/p", "https://u:***@host/p"}, // the last @ ends the user info
		{"http://host/p?flag&k=&v=1#frag", "http://host/p?flag&k=&v=***#frag"},
		{"http://[::1/x?appid=abc", "http://[::1/x?appid=***"}, // does not parse, masked all the same
		{"no url here", "no url here"},
		{"http://host/plain", "http://host/plain"},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestURLsIn(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`Get "http://127.0.0.1:9/x?appid=k3y": dial tcp 127.0.0.1:9: connect: connection refused`,
			`Get "http://127.0.0.1:9/x?appid=***": dial tcp 127.0.0.1:9: connect: connection refused`},
		{"GET http://h/x?appid=k3y: timeout", "GET http://h/x?appid=***: timeout"},
		{"see (postgres://u:pw@db/x).", "see (postgres://u:***@db/x)."},
		{"a http://h/?a=1 and https://u:p@h2/ b", "a http://h/?a=*** and https://u:***@h2/ b"},
	} {
		if got := URLsIn(tc.in); got != tc.want {
			t.Errorf("URLsIn(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestSetReplacesLongestFirstAndSkipsShortValues(t *testing.T) {
	var s Set
	s.Add("80", "POST", "  abcdefgh  ", "abcdefghij", strings.Repeat("x", MaxSecretLen+1))
	got := s.Replace("port 80 POST abcdefghij abcdefgh " + strings.Repeat("x", 10))
	want := "port 80 POST [redacted] [redacted] xxxxxxxxxx"
	if got != want {
		t.Fatalf("Replace = %q, want %q", got, want)
	}
	var empty Set
	if got := empty.Replace("abcdefgh"); got != "abcdefgh" {
		t.Fatalf("an empty set changed the text: %q", got)
	}
}

func TestSetConcurrentUse(t *testing.T) {
	var s Set
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				v := fmt.Sprintf("secret-%d-%04d", i, j)
				s.Add(v)
				if got := s.Replace("x " + v + " y"); got != "x [redacted] y" {
					t.Errorf("Replace after Add(%q) = %q", v, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestHandlerRedactsMessageAndAttributes(t *testing.T) {
	AddSecret("tok-handler-7f3a9c")
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil)))
	log = log.With("target", "http://h/x?appid=k3y-with").WithGroup("g")
	log.Error("call http://u:pw-in-msg@h/ failed: tok-handler-7f3a9c",
		"err", errors.New(`Get "http://h/x?appid=k3y-err": refused`),
		"echo", "upstream said tok-handler-7f3a9c",
		slog.Group("nested", "u", "postgres://a:pw-nested@db/x"),
		"any", map[string]string{"k": "tok-handler-7f3a9c"},
		"count", 3)
	out := buf.String()
	for _, leak := range []string{"k3y-with", "pw-in-msg", "k3y-err", "tok-handler-7f3a9c", "pw-nested"} {
		if strings.Contains(out, leak) {
			t.Errorf("log output holds %q:\n%s", leak, out)
		}
	}
	for _, keep := range []string{`"count":3`, "appid=***", "[redacted]"} {
		if !strings.Contains(out, keep) {
			t.Errorf("log output lacks %q:\n%s", keep, out)
		}
	}
	if Handler(log.Handler()) != log.Handler() {
		t.Error("wrapping a redacting handler again wrapped it twice")
	}
}

func TestHandlerDeepGroups(t *testing.T) {
	v := slog.StringValue("http://h/?k=deep-value")
	for range 100 {
		v = slog.GroupValue(slog.Attr{Key: "g", Value: v})
	}
	var buf bytes.Buffer
	slog.New(Handler(slog.NewTextHandler(&buf, nil))).Info("m", slog.Attr{Key: "g", Value: v})
	if strings.Contains(buf.String(), "deep-value") {
		t.Fatalf("deep group leaked: %s", buf.String())
	}
}

func FuzzText(f *testing.F) {
	f.Add("Get \"http://u:p@h:1/x?appid=k#f\": refused")
	f.Add("http://@?&=#")
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		if !strings.Contains(s, "://") && out != Secrets(s) {
			t.Fatalf("text without a URL changed: %q → %q", s, out)
		}
	})
}
