//go:build !purego

#include "textflag.h"

// func addRunsSSE(acc, postings, runs unsafe.Pointer, n, ahead int)
//
// For each of the first n termRuns {k int32; w float32; lo, hi int32},
// with W = {w, w, w, w}: each posting {cent, desc, doc float32; at int32}
// from lo to hi adds W * {cent, desc, doc, 0} to the 16 bytes at acc+at.
// Before it adds run i, it prefetches up to 1024 bytes of the postings of
// run i+2, if i+2 < ahead (the number of runs there are).
TEXT ·addRunsSSE(SB), NOSPLIT, $0-40
	MOVQ   acc+0(FP), DI
	MOVQ   postings+8(FP), R8
	MOVQ   runs+16(FP), R10
	MOVQ   n+24(FP), R11
	MOVQ   ahead+32(FP), R12
	SUBQ   $2, R12            // runs left that have a run two further on
	TESTQ  R11, R11
	JLE    done
	MOVL   $-1, AX
	MOVQ   AX, X6
	PSHUFD $0x40, X6, X6      // X6 = {all ones, all ones, all ones, 0}

runs_loop:
	TESTQ   R12, R12
	JLE     add
	MOVLQSX 40(R10), AX       // runs[2].lo
	MOVLQSX 44(R10), BX       // runs[2].hi
	SHLQ    $4, AX
	SHLQ    $4, BX
	ADDQ    R8, AX            // &postings[lo]
	ADDQ    R8, BX            // &postings[hi]
	LEAQ    1024(AX), DX      // at most 1024 bytes
	CMPQ    DX, BX
	CMOVQLT DX, BX

prefetch:
	CMPQ       AX, BX
	JAE        add
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	JMP        prefetch

add:
	MOVSS   4(R10), X0
	SHUFPS  $0, X0, X0        // X0 = {w, w, w, w}
	MOVLQSX 8(R10), AX        // lo
	MOVLQSX 12(R10), CX       // hi
	SUBQ    AX, CX
	SHLQ    $4, AX
	LEAQ    (R8)(AX*1), SI    // &postings[lo]
	TESTQ   CX, CX
	JLE     next

postings_loop:
	MOVLQSX 12(SI), AX        // at
	MOVUPS  (SI), X1
	ANDPS   X6, X1
	MULPS   X0, X1
	MOVUPS  (DI)(AX*1), X2
	ADDPS   X1, X2
	MOVUPS  X2, (DI)(AX*1)
	ADDQ    $16, SI
	DECQ    CX
	JNZ     postings_loop

next:
	ADDQ $16, R10
	DECQ R12
	DECQ R11
	JNZ  runs_loop

done:
	RET
