//go:build unix

package upstream

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/gateway"
)

// A stdio upstream's stderr goes to the log; closing the pool ends its
// process.
func TestStdioStderrLoggedAndProcessEndedOnClose(t *testing.T) {
	logs := &logBuffer{}
	p, err := New(stdioConfig(""), nil, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(field(mustCall(t, p, gateway.SessionKey{}, "whoami"), 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := callText(context.Background(), p, gateway.SessionKey{}, "stderr", map[string]any{"text": "warming up the flux"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stderr line in the log", func() bool { return strings.Contains(logs.String(), "warming up the flux") })
	if !strings.Contains(logs.String(), "upstream=local") {
		t.Errorf("the stderr line does not name its upstream:\n%s", logs.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the process to end", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
}
