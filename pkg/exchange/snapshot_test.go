package exchange_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/exchange"
)

type point struct {
	X, Y int
}

func init() { exchange.RegisterSnapshotType[point]("test.point") }

// A snapshot keeps everything a later step reads: body, headers, variables,
// pattern, origin, the failure (as data), typed values and bytes; numbers come
// back as int64/float64.
func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{
		"n":     3,
		"f":     1.5,
		"bytes": []byte{0, 1, 2},
		"raw":   json.RawMessage(`{"a": [1,  2]}`),
		"pt":    point{1, 2},
		"list":  []any{"x", int64(7), nil, true, map[string]any{"\x00bytes": "not a tag"}},
		"strs":  []string{"a", "b"},
		"at":    time.Date(2026, 12, 5, 1, 2, 3, 4, time.UTC),
	})
	ex.In().SetHeader("Content-Type", "application/json")
	ex.In().SetHeader("N", int64(9))
	ex.SetVariable("v", []byte("var"))
	ex.SetFromWorkflow("orders")
	ex.SetException(&statusErr{"db says no", http.StatusConflict})

	raw, err := exchange.TakeSnapshot(ex).Encode(0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := exchange.DecodeSnapshot(raw)
	if err != nil {
		t.Fatal(err)
	}
	got := exchange.NewFromSnapshot(s)
	wantBody := map[string]any{
		"n":     int64(3),
		"f":     1.5,
		"bytes": []byte{0, 1, 2},
		"raw":   json.RawMessage(`{"a": [1,  2]}`),
		"pt":    point{1, 2},
		"list":  []any{"x", int64(7), nil, true, map[string]any{"\x00bytes": "not a tag"}},
		"strs":  []any{"a", "b"},
		"at":    time.Date(2026, 12, 5, 1, 2, 3, 4, time.UTC),
	}
	if !reflect.DeepEqual(got.In().Body(), wantBody) {
		t.Errorf("body %#v\nwant %#v", got.In().Body(), wantBody)
	}
	if got.In().Header("N") != int64(9) || got.In().Header("Content-Type") != "application/json" || len(got.In().Headers()) != 2 {
		t.Errorf("headers %v", got.In().Headers())
	}
	if !reflect.DeepEqual(got.Variable("v"), []byte("var")) || got.Pattern() != exchange.InOut || got.FromWorkflow() != "orders" {
		t.Errorf("variables %v, pattern %v, from %q", got.Variables(), got.Pattern(), got.FromWorkflow())
	}
	exc := got.Exception()
	if exc == nil || exc.Error() != "db says no" || exchange.HTTPStatus(exc) != http.StatusConflict {
		t.Fatalf("exception %v (status %d)", exc, exchange.HTTPStatus(exc))
	}
	var se *exchange.SnapshotError
	if !errors.As(exc, &se) || se.Class != exchange.ClassConflict {
		t.Errorf("exception %#v", exc)
	}
	// Encoding it again gives the same snapshot (a restored failure stays the same).
	again, err := exchange.TakeSnapshot(got).Encode(0)
	if err != nil || string(again) != string(raw) {
		t.Errorf("re-encoded:\n%s\nfirst:\n%s (%v)", again, raw, err)
	}
}

type statusErr struct {
	msg    string
	status int
}

func (e *statusErr) Error() string   { return e.msg }
func (e *statusErr) HTTPStatus() int { return e.status }

// Restore replaces what the exchange had: headers and variables the snapshot
// does not have go, a failure goes when the snapshot has none.
func TestSnapshotRestoreReplaces(t *testing.T) {
	t.Parallel()
	s, err := exchange.DecodeSnapshot([]byte(`{"b":"x","h":{"A":"1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	ex := exchange.NewWithBody(exchange.InOut, "old")
	ex.In().SetHeader("B", "2")
	ex.SetVariable("v", 1)
	ex.SetException(errors.New("old failure"))
	s.Restore(ex)
	if ex.In().Body() != "x" || len(ex.In().Headers()) != 1 || ex.In().Header("A") != "1" || len(ex.Variables()) != 0 || ex.Exception() != nil || ex.Pattern() != exchange.InOnly {
		t.Fatalf("body %v headers %v variables %v exception %v pattern %v", ex.In().Body(), ex.In().Headers(), ex.Variables(), ex.Exception(), ex.Pattern())
	}
}

// A value a snapshot cannot keep fails the encoding, naming where it is; a
// snapshot over the limit fails with its size.
func TestSnapshotRefusesWhatItCannotKeep(t *testing.T) {
	t.Parallel()
	ex := exchange.NewWithBody(exchange.InOnly, map[string]any{"items": []any{1, 2, make(chan int)}})
	_, err := exchange.TakeSnapshot(ex).Encode(0)
	if err == nil || !strings.Contains(err.Error(), "body.items[2] is a chan int") {
		t.Fatalf("err %v", err)
	}
	ex = exchange.NewWithBody(exchange.InOnly, strings.Repeat("x", 3<<20+100<<10))
	_, err = exchange.TakeSnapshot(ex).Encode(1 << 20)
	var big *exchange.SnapshotTooLargeError
	if !errors.As(err, &big) || err.Error() != "the exchange is 3.1 MiB encoded, over the limit of 1 MiB" {
		t.Fatalf("err %v", err)
	}
	if _, err := exchange.DecodeSnapshot([]byte(`{"b":{"\u0000nosuch":1}}`)); err == nil || !strings.Contains(err.Error(), `body holds a value of type "nosuch"`) {
		t.Fatalf("unknown tag: %v", err)
	}
}

func TestRegisterSnapshotTypeTwicePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	exchange.RegisterSnapshotType[point]("test.point2")
}

// Whatever JSON a body holds, a snapshot of it decodes to the value it held
// (numbers as jsonnum makes them: -0 is the integer 0), and that value encodes
// and decodes to itself.
func FuzzSnapshot(f *testing.F) {
	for _, seed := range []string{`null`, `{"a":[1,2.5,"x"]}`, `{"\u0000bytes":"AAE="}`, `[{"\u0000map":{}}]`, `1e300`, `"s"`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var body any
		if json.Unmarshal([]byte(in), &body) != nil {
			return
		}
		raw, err := exchange.TakeSnapshot(exchange.NewWithBody(exchange.InOut, body)).Encode(0)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		s, err := exchange.DecodeSnapshot(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		again, err := s.Encode(0)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := exchange.DecodeSnapshot(again)
		if err != nil || !reflect.DeepEqual(s2.Body, s.Body) {
			t.Fatalf("%s\nbecame %s (%v)", raw, again, err)
		}
		// And arbitrary bytes never panic the decoder.
		_, _ = exchange.DecodeSnapshot([]byte(in))
		_ = fmt.Sprint(s.Body)
	})
}
