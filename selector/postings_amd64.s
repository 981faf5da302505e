//go:build !purego

#include "textflag.h"

// func addRunsSSE(acc, pairs, triples, runs unsafe.Pointer, n int)
//
// For each of n termRuns {k int32; w float32; lo, hi {pair, triple int32}},
// with W = {w, w, w, w}:
//   each pair {row int32; cent, doc float32} from lo.pair to hi.pair:
//     acc[row] += W * {cent, 0, doc, 0};
//   each triple {row int32; cent, desc, doc float32} from lo.triple to hi.triple:
//     acc[row] += W * {cent, desc, doc, 0}.
TEXT ·addRunsSSE(SB), NOSPLIT, $0-40
	MOVQ  acc+0(FP), DI
	MOVQ  pairs+8(FP), R8
	MOVQ  triples+16(FP), R9
	MOVQ  runs+24(FP), R10
	MOVQ  n+32(FP), R11
	XORPS X7, X7
	TESTQ R11, R11
	JLE   runs_done

runs_loop:
	MOVSS   4(R10), X0
	SHUFPS  $0, X0, X0      // X0 = {w, w, w, w}
	MOVLQSX 8(R10), AX      // lo.pair
	MOVLQSX 16(R10), CX     // hi.pair
	SUBQ    AX, CX
	LEAQ    (AX)(AX*2), AX
	LEAQ    (R8)(AX*4), SI  // &pairs[lo.pair]
	TESTQ   CX, CX
	JLE     runs_triples

runs_pairs:
	MOVLQSX  (SI), AX
	SHLQ     $4, AX
	MOVSD    4(SI), X1
	UNPCKLPS X7, X1
	MULPS    X0, X1
	MOVUPS   (DI)(AX*1), X2
	ADDPS    X1, X2
	MOVUPS   X2, (DI)(AX*1)
	ADDQ     $12, SI
	DECQ     CX
	JNZ      runs_pairs

runs_triples:
	MOVLQSX 12(R10), AX     // lo.triple
	MOVLQSX 20(R10), CX     // hi.triple
	SUBQ    AX, CX
	SHLQ    $4, AX
	LEAQ    (R9)(AX*1), SI  // &triples[lo.triple]
	TESTQ   CX, CX
	JLE     runs_next

runs_triples_loop:
	MOVLQSX (SI), AX
	SHLQ    $4, AX
	MOVSD   4(SI), X1
	MOVSS   12(SI), X2
	MOVLHPS X2, X1
	MULPS   X0, X1
	MOVUPS  (DI)(AX*1), X3
	ADDPS   X1, X3
	MOVUPS  X3, (DI)(AX*1)
	ADDQ    $16, SI
	DECQ    CX
	JNZ     runs_triples_loop

runs_next:
	ADDQ $24, R10
	DECQ R11
	JNZ  runs_loop

runs_done:
	RET
