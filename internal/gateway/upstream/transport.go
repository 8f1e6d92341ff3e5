package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/redact"
)

// upstreamTransport is the outermost RoundTripper of a pool's HTTP client. It
// adds the caller's headers (gateway.UpstreamHeader of the request's context:
// a call carries its caller's credentials on a session someone else opened)
// and, for a request made under a Call, records in the call's tracker what
// happened to it, so that Call knows whether it may send the request again.
type upstreamTransport struct {
	base http.RoundTripper
	// limit bounds a JSON answer to a POST (an SSE answer is bounded per
	// event by the SDK transport's MaxEventSize).
	limit int64
}

func (t *upstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if h := gateway.UpstreamHeader(req.Context()); len(h) > 0 {
		// A RoundTripper must not modify the caller's request.
		req = req.Clone(req.Context())
		for k, vs := range h {
			req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
		}
	}
	tr := trackerFrom(req.Context())
	if tr == nil || req.Method != http.MethodPost {
		return t.base.RoundTrip(req)
	}
	// Once the headers are written the server may have the whole request: from
	// then on the call must not be sent again. A failure before (DNS, dial
	// refused, TLS) means it never left.
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteHeaders: tr.markWrote,
	}))
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		tr.setErr(err)
		return nil, err
	}
	tr.setStatus(resp.StatusCode)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.limit, exceeded: tr.setTooLarge}
	}
	return resp, nil
}

// ErrTooLarge is an upstream's answer larger than the pool's bound.
var ErrTooLarge = errors.New("the upstream's answer is larger than the gateway accepts")

// limitedBody fails a read past left bytes (without buffering them) and
// reports it once.
type limitedBody struct {
	io.ReadCloser
	left     int64
	exceeded func()
	once     sync.Once
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, io.EOF
		}
		b.once.Do(b.exceeded)
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// tracker follows the requests of one call attempt through the transport.
type tracker struct {
	mu       sync.Mutex
	tooLarge bool  // an answer passed the pool's bound
	wrote    bool  // a request may have reached the server
	status   int   // the last HTTP status answered; 0: none
	err      error // the last transport error
}

type trackerKey struct{}

func withTracker(ctx context.Context, t *tracker) context.Context {
	return context.WithValue(ctx, trackerKey{}, t)
}

func trackerFrom(ctx context.Context) *tracker {
	t, _ := ctx.Value(trackerKey{}).(*tracker)
	return t
}

func (t *tracker) markWrote() {
	t.mu.Lock()
	t.wrote = true
	t.mu.Unlock()
}

func (t *tracker) setStatus(s int) {
	t.mu.Lock()
	t.status = s
	t.mu.Unlock()
}

func (t *tracker) setErr(err error) {
	t.mu.Lock()
	t.err = err
	t.mu.Unlock()
}

func (t *tracker) setTooLarge() {
	t.mu.Lock()
	t.tooLarge = true
	t.mu.Unlock()
}

func (t *tracker) answerTooLarge() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tooLarge
}

func (t *tracker) transportErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *tracker) state() (wrote bool, status int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.wrote, t.status
}

// trackedConn marks a stdio call as written as soon as the SDK hands it to the
// process: a pipe has no "answered without running" (HTTP's 503).
type trackedConn struct {
	sdk.Connection
}

func (c *trackedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if t := trackerFrom(ctx); t != nil {
		t.markWrote()
	}
	return c.Connection.Write(ctx, msg)
}

// trackedTransport wraps a stdio transport's connections in trackedConn.
type trackedTransport struct {
	inner sdk.Transport
}

func (t *trackedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &trackedConn{Connection: c}, nil
}

// stdioCommand builds the command of a stdio upstream: the gateway's
// environment plus the upstream's env: (sorted, so that runs are alike), its
// stderr going to the log line by line.
func stdioCommand(command string, args []string, env map[string]string, stderr io.Writer) *exec.Cmd {
	cmd := exec.Command(command, args...)
	if len(env) > 0 {
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		cmd.Env = os.Environ()
		for _, k := range keys {
			cmd.Env = append(cmd.Env, k+"="+env[k])
		}
	}
	cmd.Stderr = stderr
	return cmd
}

// newStdioTransport is the client's stdio transport (process group killed on
// close) with calls tracked.
func newStdioTransport(cmd *exec.Cmd, limit int64, name string) (sdk.Transport, func()) {
	t, kill := client.NewStdioTransport(cmd, limit, name)
	return &trackedTransport{inner: t}, kill
}

// maxStderrLine bounds one logged line of a stdio upstream's stderr.
const maxStderrLine = 4 << 10

// stderrLogger returns a writer that logs each line a stdio upstream writes to
// its stderr (redacted: a server may print its own credentials); closing it
// ends the logger.
func stderrLogger(log *slog.Logger, upstream string) io.WriteCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 1024), maxStderrLine)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				log.Info("upstream stderr", "upstream", upstream, "line", redact.Text(line))
			}
		}
		if sc.Err() != nil {
			// A line longer than the bound: drain the rest unlogged, so that the
			// process never blocks on a full pipe.
			_, _ = io.Copy(io.Discard, pr)
		}
	}()
	return pw
}

// maskedError is err with the secrets in its text masked (URLs' passwords
// and query values, the process's secret set): net/http quotes the URL of a
// failed request, and an upstream's URL may carry a key. errors.Is and As
// still see err.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// masked returns err with its text masked; nil for nil.
func masked(err error) error {
	if err == nil {
		return nil
	}
	var m *maskedError
	if errors.As(err, &m) && m == err {
		return err
	}
	return &maskedError{msg: redact.Text(err.Error()), err: err}
}
