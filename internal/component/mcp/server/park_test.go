package server

import (
	"context"
	"testing"
)

// parkOffExtension is an Extension that does nothing: its presence is what the
// transport options look at.
type parkOffExtension struct{ Extension }

func (parkOffExtension) Attach(context.Context, *ExtensionHost) error { return nil }

// A gateway's server keeps per-client state by go-sdk session (upstream
// sessions released when that session ends), so its sessions are never
// parked; a server without one parks them (the transport's default).
func TestGatewayServerNeverParks(t *testing.T) {
	t.Parallel()
	plain := &mcpServer{}
	if got := plain.transportOptions().ParkIdleAfter; got != 0 {
		t.Fatalf("a plain server's ParkIdleAfter = %v, want 0 (the transport's default)", got)
	}
	gw := &mcpServer{opts: Options{Extension: parkOffExtension{}}}
	if got := gw.transportOptions().ParkIdleAfter; got >= 0 {
		t.Fatalf("a gateway's server ParkIdleAfter = %v, want negative (never)", got)
	}
}
