package tool_test

import (
	"reflect"
	"testing"

	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/exchange"
)

// A tool.Result body survives a checkpoint: its parts (bytes, and nil data
// kept nil), its structured value with integer numbers, its error flag.
func TestResultSurvivesASnapshot(t *testing.T) {
	t.Parallel()
	r := tool.Result{
		Content: []tool.Content{
			tool.Text("hello"),
			{Type: tool.ContentImage, Data: []byte{1, 2, 3}, MIMEType: "image/png"},
			{Type: tool.ContentResourceLink, URI: "file:///x", Name: "x", Description: "the x"},
		},
		Structured: map[string]any{"count": int64(3), "ratio": 0.5},
		IsError:    true,
	}
	raw, err := exchange.TakeSnapshot(exchange.NewWithBody(exchange.InOut, r)).Encode(0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := exchange.DecodeSnapshot(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Body, r) {
		t.Fatalf("got %#v\nwant %#v", s.Body, r)
	}
}
