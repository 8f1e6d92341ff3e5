package security

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFailureLimiterCountsPerAddressAndIPv6Prefix(t *testing.T) {
	t.Parallel()
	f := NewFailureLimiter(2, time.Minute, 10)
	req := func(addr string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		return r
	}
	a, sameNet, other := req("[2001:db8::1]:4000"), req("[2001:db8::2]:5000"), req("192.0.2.7:80")
	f.Failure(a)
	if _, blocked := f.Blocked(sameNet); blocked {
		t.Fatal("blocked after one failure")
	}
	f.Failure(sameNet) // the same /64: the same client
	if wait, blocked := f.Blocked(a); !blocked || wait <= 0 || wait > time.Minute {
		t.Fatalf("not blocked after two failures of one /64 (%v)", wait)
	}
	if _, blocked := f.Blocked(other); blocked {
		t.Fatal("another address is blocked")
	}
}

func TestTokenVerifierChecksItsConfig(t *testing.T) {
	t.Parallel()
	_, err := NewTokenVerifier(OAuthConfig{Issuer: "https://id.example.com", JWKSURL: "https://id.example.com/jwks"})
	if err == nil || !strings.Contains(err.Error(), "audience") {
		t.Fatalf("err = %v", err)
	}
	v, err := NewTokenVerifier(OAuthConfig{Issuer: "https://id.example.com", Audience: "console", JWKSURL: "https://id.example.com/jwks"})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Verify(t.Context(), "not.a.jwt"); err == nil {
		t.Fatal("a malformed token verified")
	}
}
