package http_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/componenttest"
	helixhttp "github.com/arvenza/helix/internal/component/http"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{Producer: true, RequestReply: true, Headers: true, ProducerCancel: true, Stress: true},
		Setup: func(t *testing.T) *componenttest.Fixture {
			ch := make(chan componenttest.Message, 256)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				m := componenttest.Message{Body: string(body), Headers: map[string]string{}}
				for k := range r.Header {
					m.Headers[k] = r.Header.Get(k)
				}
				ch <- m
				if m.Body == componenttest.BlockBody {
					<-r.Context().Done()
					return
				}
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set(componenttest.ReplyHeader, "yes")
				_, _ = io.WriteString(w, componenttest.ReplyPrefix+m.Body)
			}))
			t.Cleanup(srv.Close)
			return &componenttest.Fixture{
				Component: helixhttp.New(nil),
				URI:       srv.URL + "/echo",
				Listen:    func() <-chan componenttest.Message { return ch },
			}
		},
	})
}

// Producer/Send runs against every scheme the component serves.
func TestConformanceHTTPS(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{Producer: true, RequestReply: true},
		Setup: func(t *testing.T) *componenttest.Fixture {
			ch := make(chan componenttest.Message, 256)
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				ch <- componenttest.Message{Body: string(body)}
				_, _ = io.WriteString(w, componenttest.ReplyPrefix+string(body))
			}))
			t.Cleanup(srv.Close)
			tr := srv.Client().Transport.(*http.Transport).Clone()
			return &componenttest.Fixture{
				Component: helixhttp.New(&helixhttp.Options{Transport: tr}),
				URI:       srv.URL + "/secure",
				Listen:    func() <-chan componenttest.Message { return ch },
			}
		},
	})
}
