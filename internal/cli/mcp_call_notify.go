package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/report"
)

// notificationPrinter writes the progress and log notifications of a call to
// stderr as they arrive, one line each:
//
//	progress 2/3 row 2
//	warning import-rows: {"skipped":1}
//
// The text is the server's: it goes through terminalSafe, and line breaks become
// spaces so that one notification stays one line. Notifications that arrive after
// stop (from a stream still closing) are dropped.
type notificationPrinter struct {
	mu      sync.Mutex
	w       io.Writer
	stopped bool
}

func (p *notificationPrinter) progress(_ context.Context, current, total float64, message string) {
	line := "progress " + formatNumber(current)
	if total > 0 {
		line += "/" + formatNumber(total)
	}
	if message != "" {
		line += " " + message
	}
	p.println(line)
}

//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still offered to clients in the window
func (p *notificationPrinter) log(m *sdk.LoggingMessageParams) {
	line := string(m.Level)
	if m.Logger != "" {
		line += " " + m.Logger
	}
	p.println(line + ": " + logData(m.Data))
}

func (p *notificationPrinter) println(line string) {
	line = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(terminalSafe(line))
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		fmt.Fprintln(p.w, line)
	}
}

func (p *notificationPrinter) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// logData shows a log message's data: a string as it is, anything else as compact
// JSON.
func logData(data any) string {
	if s, ok := data.(string); ok {
		return s
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Sprint(data)
	}
	return string(unescapeHTML(b))
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// serverLogLevel checks --server-log: a level name as MCP spells it ("warn" is
// taken for "warning"), or "none" for no log messages ("").
func serverLogLevel(name string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(name), "none") {
		return "", nil
	}
	l, err := report.ParseLevel(name)
	if err != nil {
		return "", fmt.Errorf("--server-log: %w, or none", err)
	}
	return l.String(), nil
}

// lockedWriter serializes the writes of the stdio server's stderr (copied by
// os/exec's goroutine when stderr is not a file) and of the notifications. It
// hides the writer's ReadFrom too: bytes.Buffer.ReadFrom, blocked in a read, would
// otherwise cut off what was written meanwhile.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
