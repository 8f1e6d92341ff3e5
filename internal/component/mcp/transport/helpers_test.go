package transport

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/mcp/internal/mcptest"
)

type rawReply struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, method, url string, hdr map[string]string, body string) rawReply {
	t.Helper()
	r := mcptest.Send(testCtx(t), t, method, url, hdr, body)
	return rawReply{r.Status, r.Header, r.Body}
}

func initSession(t *testing.T, url string) string {
	t.Helper()
	return mcptest.InitSession(testCtx(t), t, url)
}

const initializeBody = mcptest.InitializeBody

const callEcho = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`

// testTimeout is generous: the suite runs on a loaded 2-core machine with -race.
const testTimeout = 60 * time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
