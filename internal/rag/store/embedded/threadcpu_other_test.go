//go:build !linux

package embedded

import "time"

// threadCPUTime is 0 where the thread's CPU time is not read.
func threadCPUTime() time.Duration { return 0 }
