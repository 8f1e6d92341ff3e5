package httpserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/componenttest"
	"github.com/arvenza/helix/internal/component/httpserver"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{
			Consumer: true, RequestReply: true, Headers: true, Pattern: exchange.InOut,
			ConsumerCancel: true, StopDrains: true, ConcurrentConsumer: true, Stress: true,
		},
		Setup: func(t *testing.T) *componenttest.Fixture {
			comp := httpserver.New(nil)
			client := testClient(t)
			return &componenttest.Fixture{
				Component: comp,
				URI:       "http-server://127.0.0.1:0/conformance",
				Send: func(ctx context.Context, m componenttest.Message) (componenttest.Message, error) {
					addr, ok := comp.Addr("127.0.0.1:0")
					if !ok {
						return componenttest.Message{}, errors.New("no listener")
					}
					req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr.String()+"/conformance", strings.NewReader(m.Body))
					if err != nil {
						return componenttest.Message{}, err
					}
					req.Header.Set("Content-Type", "text/plain")
					for k, v := range m.Headers {
						req.Header.Set(k, v)
					}
					resp, err := client.Do(req)
					if err != nil {
						return componenttest.Message{}, err
					}
					defer resp.Body.Close()
					body, err := io.ReadAll(resp.Body)
					if err != nil {
						return componenttest.Message{}, err
					}
					if resp.StatusCode != http.StatusOK {
						return componenttest.Message{}, errors.New(resp.Status + ": " + string(body))
					}
					out := componenttest.Message{Body: string(body), Headers: map[string]string{}}
					for k := range resp.Header {
						out.Headers[k] = resp.Header.Get(k)
					}
					return out, nil
				},
			}
		},
	})
}

// testClient has its own transport whose idle connections are closed at cleanup, so
// that goleak sees no client goroutines left over.
func testClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
