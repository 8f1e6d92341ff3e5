package tool

import "testing"

func TestSanitizeToolName(t *testing.T) {
	// Spec §8.1.
	for id, want := range map[string]string{
		"process-order": "process_order",
		"api.v2.users":  "api_v2_users",
		"my/route/path": "my_route_path",
		"simple":        "simple",
	} {
		if got := SanitizeName(id); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", id, got, want)
		}
	}
}
