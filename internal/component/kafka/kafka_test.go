package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/component/componenttest"
	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func endpointFor(t testing.TB, c *Component, raw string) component.Endpoint {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := c.CreateEndpoint(u)
	if err != nil {
		t.Fatalf("CreateEndpoint(%s): %v", raw, err)
	}
	return ep
}

func TestConformance(t *testing.T) {
	// Not parallel: it checks process-wide state (goroutines or child processes).
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{
			Producer: true, Consumer: true, Headers: true,
			Pattern: exchange.InOnly, StopDrains: true, ConcurrentConsumer: true, Stress: true,
		},
		Setup: func(t *testing.T) *componenttest.Fixture {
			brokers := kafkatest.Brokers(t)
			topic := kafkatest.Topic(t, brokers, "conformance", 3)
			fx := &componenttest.Fixture{
				Component: New(Options{Brokers: brokers}),
				URI:       "kafka://" + topic + "?groupId=" + topic + "&commitInterval=100ms",
			}
			fx.Send = func(ctx context.Context, m componenttest.Message) (componenttest.Message, error) {
				rec := &kgo.Record{Topic: topic, Value: []byte(m.Body)}
				for k, v := range m.Headers {
					rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
				}
				kafkatest.Produce(t, brokers, rec)
				return componenttest.Message{}, nil
			}
			fx.Listen = func() <-chan componenttest.Message {
				r := kafkatest.Read(t, brokers, topic)
				out := make(chan componenttest.Message, 1024)
				go func() {
					for rec := range r.C {
						m := componenttest.Message{Body: string(rec.Value), Headers: map[string]string{}}
						for _, h := range rec.Headers {
							m.Headers[h.Key] = string(h.Value)
						}
						out <- m
					}
				}()
				return out
			}
			return fx
		},
	})
}

// TestProduceThenConsume sends records through a producer and reads them back
// through a consumer: body, key and headers travel; JSON values become maps.
func TestProduceThenConsume(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.Topic(t, brokers, "roundtrip", 2)
	c := New(Options{Brokers: brokers})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	p, err := endpointFor(t, c, "kafka://"+topic+"?key=fixed").CreateProducer()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(ctx)
	ex := exchange.NewWithBody(exchange.InOnly, map[string]any{"subject": "hello", "n": 1})
	ex.In().SetHeader("X-Trace", "t1")
	ex.In().SetHeader("HelixInternal", "no")
	ex.In().SetHeader("Count", 3) // not a string: not sent
	if err := p.Process(ctx, ex); err != nil {
		t.Fatal(err)
	}
	ex2 := exchange.NewWithBody(exchange.InOnly, "plain text")
	ex2.In().SetHeader(HeaderKey, "k2")
	if err := p.Process(ctx, ex2); err != nil {
		t.Fatal(err)
	}
	if _, ok := ex.In().Body().(map[string]any); !ok {
		t.Fatalf("the producer changed the body to %T; it is InOnly", ex.In().Body())
	}

	var mu sync.Mutex
	var got []*exchange.Exchange
	done := make(chan struct{}, 2)
	cons, err := endpointFor(t, c, "kafka://"+topic+"?groupId=g1").CreateConsumer(component.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
		mu.Lock()
		got = append(got, ex)
		mu.Unlock()
		done <- struct{}{}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("records did not arrive")
		}
	}
	if err := cons.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]*exchange.Exchange{}
	for _, ex := range got {
		byKey[ex.In().HeaderString(HeaderKey)] = ex
	}
	m := byKey["fixed"]
	if m == nil || byKey["k2"] == nil {
		t.Fatalf("keys: got %v", byKey)
	}
	body, ok := m.In().Body().(map[string]any)
	if !ok || body["subject"] != "hello" {
		t.Fatalf("JSON record body = %#v, want a map with subject", m.In().Body())
	}
	if h := m.In().Headers(); h["X-Trace"] != "t1" || h["HelixInternal"] != nil || h["Count"] != nil || h[HeaderTopic] != topic {
		t.Fatalf("headers = %v", h)
	}
	if b := byKey["k2"].In().Body(); b != "plain text" {
		t.Fatalf("text record body = %#v", b)
	}
}

func TestEndpointOptionErrors(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	for raw, want := range map[string]string{
		"kafka://":                                   "no topic",
		"kafka://t?groupid=x":                        `unknown option "groupid" (did you mean "groupId"?)`,
		"kafka://t?acks=leader":                      "acks=leader needs idempotent=false",
		"kafka://t?brokers=nohost":                   `broker "nohost" is not host:port`,
		"kafka://bad topic!":                         "Kafka topic names use letters",
		"kafka://t?saslMechanism=plain":              "needs saslUsername and saslPassword",
		"kafka://t?saslMechanism=md5":                "is not one of the allowed values",
		"kafka://t?saslUsername=u&saslPassword=s3cr": "need saslMechanism",
		"kafka://t?tlsCaFile=/nonexistent/ca.pem":    "tlsCaFile",
		"kafka://t?maxConcurrency=-1":                "maxConcurrency=-1",
	} {
		u, err := uri.Parse(raw)
		if err == nil {
			_, err = c.CreateEndpoint(u)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr") {
			t.Errorf("%s: the error shows the password: %v", raw, err)
		}
	}
	// topic= replaces the address (spec §12.2).
	ep := endpointFor(t, c, "kafka://deployments?topic=audit-log").(*endpoint)
	if ep.topic != "audit-log" {
		t.Fatalf("topic = %q, want audit-log", ep.topic)
	}
}

func TestDecodeValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, format string
		want       string // fmt of the body
	}{
		{`{"id": 9007199254740993, "s": "x"}`, "auto", "map[id:9007199254740993 s:x]"},
		{` [1, 2]`, "auto", "[1 2]"},
		{`{"broken": `, "auto", `{"broken": `},
		{`42`, "auto", "42"},
		{`plain text`, "auto", "plain text"},
		{`{"a": 1}`, "string", `{"a": 1}`},
		{`{"a": 1} trailing`, "auto", `{"a": 1} trailing`},
	} {
		got := decodeValue([]byte(tc.in), tc.format)
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("decodeValue(%q, %s) = %s (%T), want %s", tc.in, tc.format, s, got, tc.want)
		}
	}
	if b, ok := decodeValue([]byte{0xff, 0xfe}, "auto").([]byte); !ok || len(b) != 2 {
		t.Errorf("invalid UTF-8 stays bytes, got %#v", decodeValue([]byte{0xff, 0xfe}, "auto"))
	}
	if v := decodeValue(nil, "auto"); v != nil {
		t.Errorf("no value: got %#v, want nil", v)
	}
	if b, ok := decodeValue([]byte("x"), "bytes").([]byte); !ok || string(b) != "x" {
		t.Errorf("bytes format: %#v", b)
	}
}

// A consumer whose brokers do not answer starts (a broker may come up later), warns
// once, and stops cleanly.
func TestConsumerWarnsWhenBrokersDoNotAnswer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	c := New(Options{Brokers: []string{addr}, Logger: func() *slog.Logger { return logger }})
	cons, err := endpointFor(t, c, "kafka://t?groupId=g&saslMechanism=plain&saslUsername=u&saslPassword=s3cret").CreateConsumer(component.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cons.Start(ctx); err != nil {
		t.Fatalf("Start: %v; an unreachable broker must not fail Start", err)
	}
	logged := func() string {
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
	testtools.Eventually(t, "a warning that the kafka brokers do not answer", func() bool {
		return strings.Contains(logged(), "kafka brokers do not answer")
	})
	if got := logged(); strings.Contains(got, "s3cret") {
		t.Fatalf("the log shows the password: %s", got)
	}
	if err := cons.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
