package http

import (
	"context"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/tracing"
)

// startClientSpan starts the client span of one request when ctx's trace records
// (docs/tracing.md): named after the method, as the HTTP semantic conventions name
// a client span without a route. With tracing off it returns ctx and its span,
// whose methods do nothing.
func startClientSpan(ctx context.Context, method, rawURL string) (context.Context, trace.Span) {
	if !tracing.Recording(ctx) {
		return ctx, trace.SpanFromContext(ctx)
	}
	attrs := []attribute.KeyValue{attribute.String("http.request.method", method)}
	if u, err := url.Parse(rawURL); err == nil {
		// Scheme, host and path only: a query may carry an API key.
		attrs = append(attrs, attribute.String("server.address", u.Hostname()),
			attribute.String("url.full", (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()))
		if p, err := strconv.Atoi(u.Port()); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	}
	return tracing.Child(ctx, method, trace.SpanKindClient, attrs...)
}

// endClientSpan ends a client span with the response status (0: none came) and
// the request's error; a 4xx or 5xx answer marks the span failed, as the HTTP
// conventions say for clients.
func endClientSpan(span trace.Span, status int, err error) {
	if !span.IsRecording() {
		return // tracing off: not even the error's text is built
	}
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 400 && err == nil {
			span.SetAttributes(attribute.String("error.type", strconv.Itoa(status)))
			span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(status))
		}
	}
	tracing.End(span, err)
}
