package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"
)

// startupCmd times process start → first answered tools/list, several times.
func startupCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mcpload startup", flag.ContinueOnError)
	fs.SetOutput(out)
	url := fs.String("url", "", "Streamable HTTP endpoint the command will serve")
	runs := fs.Int("runs", 5, "how many times to start the command")
	stateless := fs.Bool("stateless", false, "server is stateless: tools/list without initialize")
	protocol := fs.String("protocol", defaultProtocol, "MCP protocol revision")
	timeout := fs.Duration("timeout", 30*time.Second, "give up on one start after this long")
	label := fs.String("label", "startup", "name copied into the JSON result")
	jsonOut := fs.String("json", "", "append the result as one JSON line to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	argv := fs.Args()
	if *url == "" || len(argv) == 0 || *runs < 1 {
		return errors.New("usage: mcpload startup -url URL [-runs N] -- command [args...]")
	}
	var times []time.Duration
	for i := 0; i < *runs; i++ {
		d, err := timeStartup(ctx, argv, *url, *protocol, *stateless, *timeout)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		fmt.Fprintf(out, "run %d: first tools/list answered after %.1f ms\n", i+1, ms(d))
		times = append(times, d)
	}
	slices.Sort(times)
	med := times[len(times)/2]
	fmt.Fprintf(out, "startup to first tools/list: median %.1f ms (min %.1f, max %.1f, %d runs)\n",
		ms(med), ms(times[0]), ms(times[len(times)-1]), len(times))
	if *jsonOut != "" {
		return appendJSON(*jsonOut, map[string]any{
			"label": *label, "kind": "startup", "runs": len(times),
			"median_ms": ms(med), "min_ms": ms(times[0]), "max_ms": ms(times[len(times)-1]),
		})
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// limitedBuffer keeps the first bytes a child writes, for error messages.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := 8192 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// timeStartup starts argv and polls url until tools/list succeeds, then stops the
// process (SIGTERM, then SIGKILL after 10 s) and waits for it.
func timeStartup(ctx context.Context, argv []string, url, protocol string, stateless bool, timeout time.Duration) (time.Duration, error) {
	var output limitedBuffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &output, &output
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if stopped {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	ready, err := waitReady(ctx, url, protocol, stateless, t0.Add(timeout), exited)
	if err != nil {
		var ex *exitedError
		if errors.As(err, &ex) {
			stopped = true
		}
		return 0, fmt.Errorf("%w; output: %s", err, output.String())
	}
	return ready.Sub(t0), nil
}

// exitedError says the server process ended while waitReady polled it.
type exitedError struct{ err error }

func (e *exitedError) Error() string {
	return fmt.Sprintf("server exited before answering (%v)", e.err)
}

// waitReady polls url every millisecond until a client can open a session (unless
// stateless) and list at least one tool. It gives up at deadline, when ctx ends, or
// when exited (may be nil) delivers the server's exit.
func waitReady(ctx context.Context, url, protocol string, stateless bool, deadline time.Time, exited <-chan error) (time.Time, error) {
	hc := newHTTPClient(1, 2*time.Second)
	defer hc.CloseIdleConnections()
	var lastErr error
	for {
		s := &session{hc: hc, url: url, protocol: protocol}
		err := error(nil)
		if !stateless {
			err = s.open(ctx)
		}
		if err == nil {
			var resp *rpcResponse
			resp, _, err = s.call(ctx, "tools/list", []byte(`{}`))
			if err == nil && len(resp.Result.Tools) == 0 {
				err = errors.New("tools/list answered with no tools")
			}
		}
		if err == nil {
			ready := time.Now()
			s.close(ctx)
			return ready, nil
		}
		lastErr = err
		select {
		case werr := <-exited:
			return time.Time{}, &exitedError{werr}
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("no tools/list answer from %s by the deadline, last error: %w", url, lastErr)
		}
	}
}

// waitCmd blocks until a server answers tools/list (for scripts that start servers).
func waitCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mcpload wait", flag.ContinueOnError)
	fs.SetOutput(out)
	url := fs.String("url", "", "Streamable HTTP endpoint")
	stateless := fs.Bool("stateless", false, "server is stateless: tools/list without initialize")
	protocol := fs.String("protocol", defaultProtocol, "MCP protocol revision")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		return errors.New("usage: mcpload wait -url URL [-timeout 60s]")
	}
	_, err := waitReady(ctx, *url, *protocol, *stateless, time.Now().Add(*timeout), nil)
	return err
}
