//go:build !unix

package collision

import "time"

// cpuTime is unknown here; benchmarks then report 0 CPU time.
func cpuTime() time.Duration { return 0 }
