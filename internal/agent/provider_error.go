package agent

import (
	"net/http"
	"time"
)

// NewProviderError is what a provider returns for an error of its SDK: status is
// the HTTP status (0 when no response came), msg the provider's message (empty:
// the status text), resp the response if any, for Retry-After. The API key is
// redacted from the message.
func NewProviderError(provider, apiKey string, status int, msg string, resp *http.Response) *ProviderError {
	if msg == "" {
		msg = http.StatusText(status)
	}
	pe := &ProviderError{Provider: provider, StatusCode: status, Message: Redact(msg, apiKey)}
	if resp != nil {
		pe.RetryAfter = ParseRetryAfter(resp.Header.Get, time.Now())
	}
	return pe
}
