package httpserver

import (
	"reflect"
	"testing"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// A request's exchange gets an HTTP server span with the method and path the
// consumer put on the exchange; headers that are missing are left out.
func TestTraceInfo(t *testing.T) {
	u, _ := uri.Parse("http-server://0.0.0.0:8080/orders")
	ex := exchange.NewWithBody(exchange.InOut, "x")
	ex.In().SetHeader(HeaderHTTPMethod, "POST")
	ex.In().SetHeader(HeaderHTTPPath, "/orders")
	want := component.TraceInfo{Kind: component.SpanServer, Attributes: []component.KeyValue{
		{Key: "http.request.method", Value: "POST"}, {Key: "url.path", Value: "/orders"}}}
	if got := Spec.Trace(ex, u); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := Spec.Trace(exchange.NewWithBody(exchange.InOut, "x"), u); got.Kind != component.SpanServer || len(got.Attributes) != 0 {
		t.Errorf("without headers: %+v", got)
	}
	if !Spec.FreshExchanges {
		t.Error("http-server:// requests do not start fresh exchanges")
	}
}
