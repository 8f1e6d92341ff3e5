package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/engine"
)

func stdioInitialize(version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, version)
}

// stdioLine is one line the server wrote, decoded enough to check it.
type stdioLine struct {
	raw   string
	batch bool
	id    string // raw id ("null" for errors without id); for batches the ids joined by ","
	code  int64  // error code, 0 for results
}

func parseStdioLines(t *testing.T, out string) []stdioLine {
	t.Helper()
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	var lines []stdioLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		sl := stdioLine{raw: l}
		var ms []msg
		if strings.HasPrefix(l, "[") {
			sl.batch = true
			if err := json.Unmarshal([]byte(l), &ms); err != nil {
				t.Fatalf("output line %q: %v", l, err)
			}
		} else {
			var m msg
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("output line %q: %v", l, err)
			}
			ms = []msg{m}
		}
		var ids []string
		for _, m := range ms {
			ids = append(ids, string(m.ID))
			if m.Error != nil {
				sl.code = m.Error.Code
			}
		}
		sl.id = strings.Join(ids, ",")
		lines = append(lines, sl)
	}
	return lines
}

// runStdio serves input (lines) over stdio until the server ends at its EOF, and
// returns what it wrote.
func runStdio(t *testing.T, hc *engine.Context, in io.Reader) []stdioLine {
	t.Helper()
	outR, outW := io.Pipe()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&out, outR)
	}()
	comp := startContext(t, hc, Options{ID: "pipe", Transport: "stdio", Stdin: in, Stdout: outW})
	select {
	case <-comp.Done():
	case <-time.After(testTimeout):
		t.Fatal("the stdio server did not end after its input ended")
	}
	_ = outW.Close()
	<-copied
	return parseStdioLines(t, out.String())
}

// TestStdioMalformedLinesKeepServing: a line that is not JSON, not a JSON-RPC
// message, a request with id null or without id, or a batch in a 2025-11-25
// session is answered with an error and the session goes on; ids are echoed
// exactly; results carry no 2026-07-28 fields.
func TestStdioMalformedLinesKeepServing(t *testing.T) {
	t.Parallel()
	input := strings.Join([]string{
		stdioInitialize("2025-11-25"),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`this is not json`,
		`42`,
		`[]`,
		`{"jsonrpc":"2.0","id":5,"method":"ping",}`,
		`{"jsonrpc":"2.0","id":55,"method":"ping"} {"jsonrpc":"2.0","id":56,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","id":"six","method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"greet"}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"greet"}}`,
		`{"ID":8,"Method":"ping"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`,
		`{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.0e1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
	}, "\n") + "\n"
	lines := runStdio(t, newTestContext(t, greetWorkflow()), strings.NewReader(input))

	var nullErrors []int64
	byID := map[string]stdioLine{}
	for _, l := range lines {
		if l.id == "null" {
			nullErrors = append(nullErrors, l.code)
			continue
		}
		byID[l.id] = l
	}
	wantNull := []int64{-32700, -32600, -32600, -32700, -32700, -32600, -32600, -32600}
	if fmt.Sprint(nullErrors) != fmt.Sprint(wantNull) {
		t.Errorf("errors without id: %v, want %v\n%v", nullErrors, wantNull, lines)
	}
	if b, ok := byID[`6,"six"`]; !ok || !b.batch || b.code != -32600 {
		t.Errorf("batch in a 2025-11-25 session: %+v (all: %v)", b, lines)
	}
	for _, id := range []string{"9007199254740993", "9223372036854775807", "10", "7"} {
		l, ok := byID[id]
		if !ok || l.code != 0 {
			t.Errorf("no result for id %s: %v", id, lines)
		}
	}
	if l := byID["9007199254740993"]; !strings.Contains(l.raw, "Hello, Ada!") {
		t.Errorf("tool result: %s", l.raw)
	}
	for _, k := range newProtocolResultKeys {
		if strings.Contains(byID["7"].raw, `"`+k+`"`) {
			t.Errorf("tools/list of a 2025-11-25 session has %s: %s", k, byID["7"].raw)
		}
	}
	for _, id := range []string{"5", "55", "56", "8"} {
		if _, ok := byID[id]; ok {
			t.Errorf("id %s of a refused line was served: %v", id, lines)
		}
	}
}

// TestStdioBatchesBefore20250618: batches of earlier sessions are answered as one
// array in the batch's order, as by the go-sdk; an invalid element gets its error
// in the array.
func TestStdioBatchesBefore20250618(t *testing.T) {
	t.Parallel()
	input := strings.Join([]string{
		stdioInitialize("2025-03-26"),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"z","progress":1}},{"jsonrpc":"2.0","id":null,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\n") + "\n"
	lines := runStdio(t, newTestContext(t, greetWorkflow()), strings.NewReader(input))
	var batch *stdioLine
	for i := range lines {
		if lines[i].batch {
			batch = &lines[i]
		}
	}
	if batch == nil || batch.id != "2,null,3" {
		t.Fatalf("batch answer: %v", lines)
	}
	// The ping after the batch is answered (requests run concurrently, so its
	// answer may come before the batch's).
	if !slices.ContainsFunc(lines, func(l stdioLine) bool { return l.id == "4" }) {
		t.Errorf("the session did not go on after the batch: %v", lines)
	}
}

// TestStdioCancelledCallGetsNoResult: after notifications/cancelled for a running
// call no result is written for it (and the server still ends at EOF at once).
func TestStdioCancelledCallGetsNoResult(t *testing.T) {
	t.Parallel()
	probe := newSlowProbe()
	inR, inW := io.Pipe()
	done := make(chan []stdioLine, 1)
	go func() { done <- runStdio(t, newTestContext(t, fastWorkflows(probe)...), inR) }()
	write := func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Errorf("write %s: %v", line, err)
		}
	}
	write(stdioInitialize("2025-11-25"))
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	probe.waitStarted(t)
	write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"test"}}`)
	probe.waitCancelled(t)
	// At EOF the server waits for the answers still due; a withheld result is not
	// one of them.
	_ = inW.Close()
	var lines []stdioLine
	select {
	case lines = <-done:
	case <-time.After(testTimeout):
		t.Fatal("the server did not end")
	}
	for _, l := range lines {
		if l.id == "3" {
			t.Errorf("the cancelled call was answered: %s", l.raw)
		}
	}
	if len(lines) != 1 || lines[0].id != "1" {
		t.Errorf("output: %v", lines)
	}
}
