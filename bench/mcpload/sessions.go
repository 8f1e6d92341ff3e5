package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// sessionsCmd opens many stateful sessions and leaves them idle, reports the
// server's memory, then (with -idle) waits past the server's idle timeout and checks
// that the sessions are gone.
func sessionsCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mcpload sessions", flag.ContinueOnError)
	fs.SetOutput(out)
	url := fs.String("url", "", "Streamable HTTP endpoint of the (stateful) MCP server")
	n := fs.Int("n", 10000, "sessions to open")
	conc := fs.Int("clients", 16, "concurrent openers")
	pid := fs.Int("pid", 0, "server PID for RSS (/proc)")
	idle := fs.Duration("idle", 0, "the server's session idle timeout; when set, wait past it and probe every session")
	settle := fs.Duration("settle", 0, "after the eviction check, wait this long and read RSS again (the Go runtime returns freed memory to the OS only after a GC, which an idle server runs at most every 2 minutes)")
	protocol := fs.String("protocol", defaultProtocol, "MCP protocol revision")
	jsonOut := fs.String("json", "", "append the result as one JSON line to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || *n < 1 || *conc < 1 {
		return errors.New("usage: mcpload sessions -url URL [-n 10000] [-pid PID] [-idle 10s]")
	}
	rep := map[string]any{"kind": "sessions", "sessions": *n}
	rss := func(key string) {
		if *pid <= 0 {
			return
		}
		r, peak, anon, err := procMemAnon(*pid)
		if err != nil {
			fmt.Fprintln(out, "  rss:", err)
			return
		}
		rep[key+"_rss_kb"], rep[key+"_peak_rss_kb"], rep[key+"_anon_rss_kb"] = r, peak, anon
		fmt.Fprintf(out, "%-8s rss %.1f MiB (peak %.1f MiB), anonymous %.1f MiB\n", key,
			float64(r)/1024, float64(peak)/1024, float64(anon)/1024)
	}
	rss("before")

	hc := newHTTPClient(*conc, 30*time.Second)
	defer hc.CloseIdleConnections()
	ids := make([]string, *n)
	var next atomic.Int64
	var errs errorLog
	t0 := time.Now()
	forEach(*conc, func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= *n || ctx.Err() != nil {
				return
			}
			s := &session{hc: hc, url: *url, protocol: *protocol}
			if err := s.open(ctx); err != nil {
				errs.add(err)
				continue
			}
			if s.id == "" {
				errs.add(errors.New("server returned no Mcp-Session-Id: is it stateless?"))
				continue
			}
			ids[i] = s.id
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	fmt.Fprintf(out, "opened %d sessions in %.1fs, %d errors %q\n", int64(*n)-errs.n, time.Since(t0).Seconds(), errs.n, errs.samples)
	rep["open_errors"] = errs.n
	rss("open")
	if *pid > 0 {
		if before, ok := rep["before_rss_kb"].(int64); ok {
			per := float64(rep["open_rss_kb"].(int64)-before) / float64(*n)
			rep["kb_per_session"] = per
			// The anonymous part (heap, stacks) is what the sessions cost; VmRSS
			// also moves with the executable's pages the kernel keeps mapped.
			anon := float64(rep["open_anon_rss_kb"].(int64)-rep["before_anon_rss_kb"].(int64)) / float64(*n)
			rep["anon_kb_per_session"] = anon
			fmt.Fprintf(out, "         %.1f KiB per idle session (%.1f KiB anonymous)\n", per, anon)
		}
	}

	if *idle > 0 {
		// The server's timers fire at idle after each session's last request; add a
		// margin for a loaded machine.
		wait := *idle + *idle/2 + 2*time.Second
		fmt.Fprintf(out, "waiting %s for the idle timeout (%s)…\n", wait, *idle)
		if !sleepUntil(ctx, time.Now().Add(wait)) {
			return ctx.Err()
		}
		var alive, gone, other atomic.Int64
		var perr errorLog
		next.Store(0)
		forEach(*conc, func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= *n || ctx.Err() != nil {
					return
				}
				if ids[i] == "" {
					continue
				}
				s := &session{hc: hc, url: *url, protocol: *protocol, id: ids[i]}
				_, _, err := s.call(ctx, "tools/list", []byte(`{}`))
				var se *statusError
				switch {
				case err == nil:
					alive.Add(1)
				case errors.As(err, &se) && se.Status == http.StatusNotFound:
					gone.Add(1)
				default:
					other.Add(1)
					perr.add(err)
				}
			}
		})
		fmt.Fprintf(out, "after idle: %d sessions gone (404), %d still alive, %d other errors %q\n",
			gone.Load(), alive.Load(), other.Load(), perr.samples)
		rep["evicted"], rep["alive"], rep["probe_errors"] = gone.Load(), alive.Load(), other.Load()
		rss("evicted")
		if *settle > 0 {
			fmt.Fprintf(out, "waiting %s for the runtime to return memory…\n", *settle)
			if !sleepUntil(ctx, time.Now().Add(*settle)) {
				return ctx.Err()
			}
			rss("settled")
		}
	}
	if *jsonOut != "" {
		if err := appendJSON(*jsonOut, rep); err != nil {
			return err
		}
	}
	if errs.n > 0 {
		return fmt.Errorf("%w: %d sessions failed to open", errFailed, errs.n)
	}
	if v, _ := rep["alive"].(int64); v > 0 {
		return fmt.Errorf("%w: %d sessions outlived the idle timeout", errFailed, v)
	}
	if v, _ := rep["probe_errors"].(int64); v > 0 {
		return fmt.Errorf("%w: %d probes failed otherwise", errFailed, v)
	}
	return nil
}

// forEach runs f on n goroutines and waits for all of them.
func forEach(n int, f func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
}
