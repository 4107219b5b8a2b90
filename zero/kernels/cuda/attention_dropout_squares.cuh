// Dropout inside the fast attention kernels: why the operands a warp takes as A are
// loaded in pair order, so that one Philox block gives a thread all the factors of an
// 8-key step. Part of the fast kernels (attention.cuh lists the parts). The mask itself,
// shared with the CPU, is zero/kernels/attention_dropout.h.
//
// Note [Attention dropout squares]
// The mask (Note [Attention dropout] in cpu/attention_cpu.cpp) gives each 2 x 2 square of
// queries 2a, 2a + 1 and keys 2c, 2c + 1 the four words of one Philox block, so the four
// factors of a square cost one block evaluation, ten Philox rounds. Drawing each factor
// on its own had cost more instructions than the tile products (docs/speed_notes.md,
// item 16). A thread therefore has to hold whole squares.
//
// Per 8-key step a thread's accumulator holds two columns that are neighbours, 2t and
// 2t + 1 (Note [Tensor-Core fragments]), but two rows that are not: g and g + 8 of its
// warp's 16. Loading the tile in pair order (`pair_row`: in each group of 16 rows, row 2m
// goes to shared row m and row 2m + 1 to shared row m + 8) makes the thread's fragment
// rows g and g + 8 the tile rows 2g and 2g + 1: the four values are one square. The
// permutation is free, done by the load's addressing; picking the rows out of order in
// the fragment reads instead would cost bank conflicts. The tiles loaded in pair order are
// those taken as A: Q and dO in the forward and dQ kernels, K and V in the dK, dV kernel,
// and, with dropout, Q in the warpgroup forward and K and V in its backward (sm90/).
// Their accumulator rows are then pairs too, which is why a thread (g, t) writes rows
// 2g and 2g + 1 (`store_acc`).
//
// Where the factors meet the arithmetic: the forward sums the undropped P into l but
// multiplies V by P * F; the backward uses P^T * F for dV and dP * F in dS. In the dK, dV
// kernel the thread's rows are keys and its columns queries, so the square is read
// transposed: f[2 (i % 2) + key % 2] for the thread's element (key, i).
#pragma once

namespace zero::ops::cuda::flash {

// The shared row of tile row r in pair order (Note [Attention dropout squares]).
__device__ inline int pair_row(int r) { return (r & ~15) | (r & 1) << 3 | (r & 15) >> 1; }

}  // namespace zero::ops::cuda::flash
