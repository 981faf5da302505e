//go:build unix

package collision

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time this process has used, so benchmarks can
// report work done independently of what else the machine runs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
