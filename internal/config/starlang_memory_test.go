package config

import (
	"strings"
	"testing"
)

func TestStarlangMaxMemory(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int64
	}{
		{"64MiB", 64 << 20},
		{"128MB", 128_000_000},
		{"1 GiB", 1 << 30},
		{"512KiB", 512 << 10},
		{"1048576", 1 << 20},
		{"2_000_000", 2_000_000},
		{"100kB", 100_000},
		{"7B", 7},
	} {
		cfg, errs := load(t, "helix:\n  starlang_max_memory: "+tc.value+"\n")
		if errs != nil {
			t.Fatalf("%s: %v", tc.value, errs)
		}
		if got := cfg.Helix.StarlangMaxMemory; got != tc.want {
			t.Errorf("%s: StarlangMaxMemory = %d, want %d", tc.value, got, tc.want)
		}
	}
	cfg, errs := load(t, "helix:\n  name: x\n")
	if errs != nil || cfg.Helix.StarlangMaxMemory != 0 {
		t.Fatalf("absent: %d, %v (want 0, the default)", cfg.Helix.StarlangMaxMemory, errs)
	}
}

func TestStarlangMaxMemoryBadValues(t *testing.T) {
	for _, value := range []string{"lots", "64XB", "-1", "0", "1.5.5MiB", "[1]", "99999999999GiB"} {
		_, errs := load(t, "helix:\n  name: x\n  starlang_max_memory: "+value+"\n")
		if errs == nil {
			t.Errorf("%s: no error", value)
			continue
		}
		msg := errs.Error()
		if !strings.Contains(msg, ":3:") || !strings.Contains(msg, "helix.starlang_max_memory") {
			t.Errorf("%s: error %q lacks the position (line 3) or the key", value, msg)
		}
		if !strings.Contains(msg, "MiB") {
			t.Errorf("%s: error %q does not say how to write a size", value, msg)
		}
	}
}
