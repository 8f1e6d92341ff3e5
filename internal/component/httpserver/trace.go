package httpserver

import (
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// traceInfo makes the span of a request's exchange an HTTP server span with the
// semantic conventions' method and path.
func traceInfo(ex *exchange.Exchange, _ *uri.URI) component.TraceInfo {
	info := component.TraceInfo{Kind: component.SpanServer}
	if v := ex.In().HeaderString(HeaderHTTPMethod); v != "" {
		info.Attributes = append(info.Attributes, component.KeyValue{Key: "http.request.method", Value: v})
	}
	if v := ex.In().HeaderString(HeaderHTTPPath); v != "" {
		info.Attributes = append(info.Attributes, component.KeyValue{Key: "url.path", Value: v})
	}
	return info
}
