//go:build !purego

#include "textflag.h"

// func addRunsAVX(acc, postings, runs unsafe.Pointer, n, ahead int)
//
// For each of the first n Runs {Term int32; W float32; Lo, Hi int32}:
// each Posting {Cent, Desc, Doc float32; At int32} from Lo to Hi adds
// {W, W, W, W} * {Cent, Desc, Doc, 0} to the 16 bytes at acc+At.
// The loop takes four postings at a time, each one's load, add and store
// in turn, so that a row twice among the four still sums in order. Before
// it adds run i, it prefetches up to 1024 bytes of the postings of run
// i+2, if i+2 < ahead (the number of runs there are). Only VEX-encoded
// 128-bit instructions are used (AVX).
TEXT ·addRunsAVX(SB), NOSPLIT, $0-40
	MOVQ    acc+0(FP), DI
	MOVQ    postings+8(FP), R8
	MOVQ    runs+16(FP), R10
	MOVQ    n+24(FP), R11
	MOVQ    ahead+32(FP), R12
	SUBQ    $2, R12           // runs left that have a run two further on
	TESTQ   R11, R11
	JLE     done
	MOVL    $-1, AX
	VMOVQ   AX, X6
	VPSHUFD $0x40, X6, X6     // X6 = {all ones, all ones, all ones, 0}

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
	VBROADCASTSS 4(R10), X0     // X0 = {w, w, w, w}
	MOVLQSX      8(R10), AX     // lo
	MOVLQSX      12(R10), CX    // hi
	SUBQ         AX, CX         // postings in the run
	SHLQ         $4, AX
	LEAQ         (R8)(AX*1), SI // &postings[lo]
	SUBQ         $4, CX
	JL           tail

four:
	MOVLQSX 12(SI), AX        // the four postings' sums: acc+at
	MOVLQSX 28(SI), BX
	MOVLQSX 44(SI), DX
	MOVLQSX 60(SI), R13
	ADDQ    DI, AX
	ADDQ    DI, BX
	ADDQ    DI, DX
	ADDQ    DI, R13
	VANDPS  (SI), X6, X1
	VANDPS  16(SI), X6, X2
	VANDPS  32(SI), X6, X3
	VANDPS  48(SI), X6, X4
	VMULPS  X0, X1, X1
	VMULPS  X0, X2, X2
	VMULPS  X0, X3, X3
	VMULPS  X0, X4, X4
	VADDPS  (AX), X1, X1
	VMOVUPS X1, (AX)
	VADDPS  (BX), X2, X2
	VMOVUPS X2, (BX)
	VADDPS  (DX), X3, X3
	VMOVUPS X3, (DX)
	VADDPS  (R13), X4, X4
	VMOVUPS X4, (R13)
	ADDQ    $64, SI
	SUBQ    $4, CX
	JGE     four

tail:
	ADDQ $4, CX
	JZ   next

one:
	MOVLQSX 12(SI), AX
	VANDPS  (SI), X6, X1
	VMULPS  X0, X1, X1
	VADDPS  (DI)(AX*1), X1, X1
	VMOVUPS X1, (DI)(AX*1)
	ADDQ    $16, SI
	DECQ    CX
	JNZ     one

next:
	ADDQ $16, R10
	DECQ R12
	DECQ R11
	JNZ  runs_loop

done:
	VZEROUPPER
	RET
