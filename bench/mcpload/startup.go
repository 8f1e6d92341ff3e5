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

	hc := newHTTPClient(1, 2*time.Second)
	defer hc.CloseIdleConnections()
	deadline := t0.Add(timeout)
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
			d := time.Since(t0)
			s.close(ctx)
			return d, nil
		}
		lastErr = err
		select {
		case werr := <-exited:
			stopped = true
			return 0, fmt.Errorf("%s exited before answering (%v): %s", argv[0], werr, output.String())
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no tools/list answer within %s, last error: %w; output: %s", timeout, lastErr, output.String())
		}
	}
}
