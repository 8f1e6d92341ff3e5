package exchange

import "testing"

func TestIsReservedHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"HelixFileName": true, "helixfilename": true, "HELIXMCPTOOLNAME": true, "hElIx": true,
		"Helix": true, "HelixAgentSessionId": true,
		"": false, "Heli": false, "X-Helix": false, " HelixFileName": false, "Content-Type": false,
		"héliX": false, "Hel\u0131x": false, // dotless i is not "i"
	} {
		if got := IsReservedHeader(name); got != want {
			t.Errorf("IsReservedHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestSetInboundHeaderDropsReserved: a foreign header under a reserved name is
// dropped, and does not touch a header Helix set under that name.
func TestSetInboundHeaderDropsReserved(t *testing.T) {
	m := newMessage(nil)
	m.SetHeader("HelixFileName", "mine.txt")
	if m.SetInboundHeader("helixFileName", "/etc/passwd") || m.SetInboundHeader("HelixFileName", "/etc/passwd") {
		t.Error("SetInboundHeader set a reserved header")
	}
	if !m.SetInboundHeader("X-Trace", "t1") {
		t.Error("SetInboundHeader dropped an ordinary header")
	}
	want := map[string]any{"HelixFileName": "mine.txt", "X-Trace": "t1"}
	if len(m.Headers()) != len(want) {
		t.Fatalf("headers %v, want %v", m.Headers(), want)
	}
	for k, v := range want {
		if m.Header(k) != v {
			t.Errorf("%s = %v, want %v (headers %v)", k, m.Header(k), v, m.Headers())
		}
	}
}
