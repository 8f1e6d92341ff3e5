package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// backendHandler is a backend of fixed capacity (a database pool, an API with
// a concurrency quota): a request waits for one of slots, holds it for service
// and is answered {"ok":true}. Requests beyond the slots queue, as they would
// at such a backend: capacity is slots/service per second whatever is offered.
func backendHandler(slots int, service time.Duration) http.Handler {
	sem := make(chan struct{}, slots)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		time.Sleep(service)
		<-sem
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
}

// backendCmd serves backendHandler until ctx ends (the overload benchmark's
// second workload: a tool that waits on a backend of fixed capacity).
func backendCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mcpload backend", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:3198", "listen address")
	slots := fs.Int("slots", 8, "requests served at once; the others wait")
	service := fs.Duration("service", 5*time.Millisecond, "time each request holds its slot")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *slots < 1 || *service <= 0 {
		return errors.New("-slots must be at least 1 and -service positive")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: backendHandler(*slots, *service), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "backend on %s: %d slots × %v = %.0f requests/s\n", ln.Addr(), *slots, *service,
		float64(*slots)/service.Seconds())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
