// The one order of every long f32 sum in the numeric contract (docs/numerics.md, "Summation
// order"), written once for the reference, the cpu device and the GPU: the terms in index order
// are cut into blocks of AMP_SUM_BLOCK; each block is summed in order from +0; the block sums are
// then added pairwise, level by level: (b0 + b1), (b2 + b3), ..., an odd last one carried up
// unchanged, until one is left. A sum of at most AMP_SUM_BLOCK terms is the plain in-order sum.
//
// Why: one chain of n f32 additions has an error bound growing with n (a batch-norm channel of
// 65,536 values lost about 40 ulps where f64 accumulation loses under 1); the blocked tree's bound
// grows with AMP_SUM_BLOCK + log2(n / AMP_SUM_BLOCK), and it costs one extra addition per block.
// The order is fixed, so every device gives the same bits.
//
// AmpSumTree keeps the tree as a binary counter (level l holds a finished subtree of 2^l blocks),
// so block sums can be pushed as they are made; `result` adds the held subtrees from the smallest
// up, which is exactly the level-by-level tree (test/unit/kernels/SumOrderTest.cpp checks both).
#ifndef AMP_RUNTIME_KERNELS_MATH_SUMORDER_H
#define AMP_RUNTIME_KERNELS_MATH_SUMORDER_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees HostDevice.h first in the same translation unit
#include "runtime/kernels/math/HostDevice.h"
#endif

#define AMP_SUM_BLOCK 256
#define AMP_SUM_LEVELS 40  // up to 2^40 blocks

// The level loops run once per block, so unrolling them buys nothing; left rolled, NVRTC compiles
// the many kernels that sum as fast as before.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define AMP_SUM_ROLLED _Pragma("unroll 1")
#else
#define AMP_SUM_ROLLED
#endif

// T is float, or a vector type whose `+` adds element by element (each element its own sum).
template <class T>
struct AmpSumTree {
  T level[AMP_SUM_LEVELS];
  long long blocks;

  AMP_TM void reset() { blocks = 0; }
  // Adds the next block's sum.
  AMP_TM void push(T blockSum) {
    long long b = blocks++;
    int l = 0;
    AMP_SUM_ROLLED
    for (; b & 1; b >>= 1, ++l) blockSum = level[l] + blockSum;  // the left subtree first
    level[l] = blockSum;
  }
  // The tree over every pushed block; `empty` (+0) when none was.
  AMP_TM T result(T empty) const {
    T v = empty;
    bool any = false;
    AMP_SUM_ROLLED
    for (int l = 0; l < AMP_SUM_LEVELS; ++l)
      if ((blocks >> l) & 1) {
        v = any ? level[l] + v : level[l];
        any = true;
      }
    return v;
  }
};

// The same order fed one term at a time: `add` each term in index order, then `result`.
template <class T>
struct AmpBlockedSum {
  AmpSumTree<T> tree;
  T block, zero;
  int inBlock;

  AMP_TM void reset(T zeroValue) {
    tree.reset();
    zero = zeroValue;
    block = zeroValue;
    inBlock = 0;
  }
  AMP_TM void add(T term) {
    block = block + term;
    if (++inBlock == AMP_SUM_BLOCK) {
      tree.push(block);
      block = zero;
      inBlock = 0;
    }
  }
  AMP_TM T result() const {
    if (inBlock == 0) return tree.result(zero);
    AmpSumTree<T> t = tree;
    t.push(block);
    return t.result(zero);
  }
};

// sum_{j < n} term(j) in the order above, f32.
template <class Term>
AMP_TM float amp_blocked_sum(long long n, const Term& term) {
  AmpSumTree<float> tree;
  tree.reset();
  for (long long b = 0; b < n; b += AMP_SUM_BLOCK) {
    const long long e = n - b < AMP_SUM_BLOCK ? n : b + AMP_SUM_BLOCK;
    float s = 0.0f;
    for (long long j = b; j < e; ++j) s += term(j);
    tree.push(s);
  }
  return tree.result(0.0f);
}

#endif  // AMP_RUNTIME_KERNELS_MATH_SUMORDER_H
