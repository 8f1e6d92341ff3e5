package redislimit

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The script is sent by its digest; a server that lost it (restart, SCRIPT
// FLUSH) gets it again and keeps deciding.
func TestScriptSurvivesFlush(t *testing.T) {
	m := miniredis.RunT(t)
	l, err := New(Options{URL: "redis://" + m.Addr() + "/0", PerMinute: 3, Namespace: "t:"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	admin := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer admin.Close()
	for i := range 4 {
		if i == 2 {
			if err := admin.ScriptFlush(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		ok, _, err := l.Allow(context.Background(), "c")
		if err != nil || ok != (i < 3) {
			t.Fatalf("request %d: ok=%v err=%v", i+1, ok, err)
		}
	}
	if !m.Exists("t:c") {
		t.Error("the bucket is not under its namespace")
	}
}

func TestParseURL(t *testing.T) {
	o, err := ParseURL("rediss://me:pw@cache.internal:6380/2")
	if err != nil {
		t.Fatal(err)
	}
	if o.Addr != "cache.internal:6380" || o.Username != "me" || o.Password != "pw" || o.DB != 2 ||
		o.TLSConfig == nil || o.TLSConfig.ServerName != "cache.internal" {
		t.Errorf("parsed %+v", o)
	}
	if o, err := ParseURL("redis://cache"); err != nil || o.Addr != "cache:6379" || o.TLSConfig != nil {
		t.Errorf("defaults: %+v %v", o, err)
	}
	if got := Redact("redis://:pw@cache:6379/0"); strings.Contains(got, "pw") || !strings.Contains(got, "cache:6379") {
		t.Errorf("Redact = %q", got)
	}
	if _, err := New(Options{URL: "redis://cache", PerMinute: 0}); err == nil {
		t.Error("a limit of 0 was accepted")
	}
}
