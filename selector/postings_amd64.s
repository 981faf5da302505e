//go:build !purego

#include "textflag.h"

// func addPairsSSE(acc unsafe.Pointer, pairs unsafe.Pointer, n int, w float32)
//
// For each of n pairs {row int32; cent, doc float32}:
// acc[row] += w * {cent, 0, doc, 0}.
TEXT ·addPairsSSE(SB), NOSPLIT, $0-28
	MOVQ   acc+0(FP), DI
	MOVQ   pairs+8(FP), SI
	MOVQ   n+16(FP), CX
	MOVSS  w+24(FP), X0
	SHUFPS $0, X0, X0       // X0 = {w, w, w, w}
	XORPS  X7, X7           // X7 = 0
	TESTQ  CX, CX
	JLE    pairs_done

pairs_loop:
	MOVLQSX  (SI), AX       // row
	SHLQ     $4, AX         // row * 16 bytes
	MOVSD    4(SI), X1      // X1 = {cent, doc, 0, 0}
	UNPCKLPS X7, X1         // X1 = {cent, 0, doc, 0}
	MULPS    X0, X1
	MOVUPS   (DI)(AX*1), X2
	ADDPS    X1, X2
	MOVUPS   X2, (DI)(AX*1)
	ADDQ     $12, SI
	DECQ     CX
	JNZ      pairs_loop

pairs_done:
	RET

// func addTriplesSSE(acc unsafe.Pointer, triples unsafe.Pointer, n int, w float32)
//
// For each of n triples {row int32; cent, desc, doc float32}:
// acc[row] += w * {cent, desc, doc, 0}.
TEXT ·addTriplesSSE(SB), NOSPLIT, $0-28
	MOVQ   acc+0(FP), DI
	MOVQ   triples+8(FP), SI
	MOVQ   n+16(FP), CX
	MOVSS  w+24(FP), X0
	SHUFPS $0, X0, X0       // X0 = {w, w, w, w}
	TESTQ  CX, CX
	JLE    triples_done

triples_loop:
	MOVLQSX (SI), AX        // row
	SHLQ    $4, AX          // row * 16 bytes
	MOVSD   4(SI), X1       // X1 = {cent, desc, 0, 0}
	MOVSS   12(SI), X2      // X2 = {doc, 0, 0, 0}
	MOVLHPS X2, X1          // X1 = {cent, desc, doc, 0}
	MULPS   X0, X1
	MOVUPS  (DI)(AX*1), X3
	ADDPS   X1, X3
	MOVUPS  X3, (DI)(AX*1)
	ADDQ    $16, SI
	DECQ    CX
	JNZ     triples_loop

triples_done:
	RET
