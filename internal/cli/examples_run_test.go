package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

// runningExample is `helix run` of one file in this process, stopped (and its exit
// code checked) when the test ends.
type runningExample struct {
	stderr *testtools.SyncBuffer
}

// runExample starts `helix run files…` and waits until every address in waitFor accepts
// connections. The caller sets the environment the file reads (ports, URLs of fakes)
// before calling.
func runExample(t *testing.T, files []string, waitFor ...string) *runningExample {
	t.Helper()
	args := []string{"run"}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, abs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout testtools.SyncBuffer
	run := &runningExample{stderr: &testtools.SyncBuffer{}}
	done := make(chan int, 1)
	go func() {
		done <- ExecuteContext(ctx, args, strings.NewReader(""), &stdout, run.stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != ExitOK {
				t.Errorf("helix %v: exit code %d; stderr:\n%s", args, code, run.stderr.String())
			}
		case <-time.After(testtools.StartupBound):
			t.Errorf("helix %v did not stop after cancellation", args)
		}
	})
	for _, addr := range waitFor {
		testtools.WaitForTCP(t, addr, testtools.StartupBound)
	}
	return run
}

// freeLocalPort sets the environment variable name to a free port and returns the
// loopback address with that port.
func freeLocalPort(t *testing.T, name string) string {
	t.Helper()
	port := testtools.FreePort(t)
	t.Setenv(name, fmt.Sprint(port))
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// eventually retries check until it returns "" or the deadline passes, then fails
// with the last complaint.
func eventually(t *testing.T, timeout time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
