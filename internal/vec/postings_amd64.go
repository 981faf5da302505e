//go:build !purego

package vec

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// On amd64 the posting loop is in assembly: a posting's weights are added
// to its row's sums with one vector multiply and one vector add, instead
// of a scalar multiply and add per weight, four postings a turn, and many
// runs are added in one call. Each lane rounds as the scalar operation
// does, so the sums are the same to the bit (TestAddRuns). The loop uses
// AVX's three-operand instructions, which read their memory operands
// unaligned and save the register copies of the SSE forms; a processor
// without AVX gets the portable loop.
//
// A run's postings are read in order, which the processor's prefetcher
// follows, but each run starts somewhere else in an index larger than the
// core's cache. So while it adds a run, the loop also prefetches the first
// kilobyte (16 cache lines) of the run after next: the distance chosen on
// MetaTool's queries, see docs/benchmarks.md.
//
// The loop indexes acc by the postings' offsets without a bounds check, so
// AddRuns' contract is the caller's to keep: every posting's row lies in
// acc (PostingsIn) and every run, including the ones the loop prefetches,
// lies within postings (selector's triSpace checks acc's length and takes
// its runs from its own offsets). It reads Run and Posting at the offsets
// TestPostingLayout checks.

// hasAVX reports whether the processor has AVX, which the assembly loop
// needs.
var hasAVX = cpu.X86.HasAVX

//go:noescape
func addRunsAVX(acc, postings, runs unsafe.Pointer, n, ahead int)

// maxCallPostings bounds the postings that one assembly call adds, but for
// a single longer run. The runtime cannot preempt assembly, so a garbage
// collection that must stop every goroutine waits for the call to return;
// 1<<16 postings take a small fraction of a millisecond. A query over
// MetaTool's 199 tools (about 16,000 postings) is one call; one over
// 100,000 tools, about 35.
const maxCallPostings = 1 << 16

// AddRuns adds, for each run in order, W times each of its postings'
// weights to the sums of the posting's row in acc (acc[row][0] += W·Cent,
// acc[row][1] += W·Desc, acc[row][2] += W·Doc), each product rounded to
// float32 before it is added. Every posting's row must lie in acc
// (PostingsIn) and every run in postings. Here it is the assembly loop
// when the processor has AVX.
func AddRuns(acc [][4]float32, postings []Posting, runs []Run) {
	addRunsBounded(acc, postings, runs, maxCallPostings)
}

// addRunsBounded is AddRuns with at most maxPostings postings a call (more
// only for a single run that has more).
func addRunsBounded(acc [][4]float32, postings []Posting, runs []Run, maxPostings int) {
	if !hasAVX {
		addRunsGo(acc, postings, runs)
		return
	}
	for len(runs) > 0 {
		n, total := 0, 0
		for n < len(runs) {
			size := int(runs[n].Hi - runs[n].Lo)
			if n > 0 && total+size > maxPostings {
				break
			}
			total += size
			n++
		}
		// The call may prefetch any run of the slice, even one a later
		// call adds.
		addRunsAVX(unsafe.Pointer(unsafe.SliceData(acc)), unsafe.Pointer(unsafe.SliceData(postings)),
			unsafe.Pointer(unsafe.SliceData(runs)), n, len(runs))
		runs = runs[n:]
	}
}
