#include "jit/loop/row_program.h"

#include <algorithm>

namespace kiln::jit {

namespace {

// The eager kernels' constants (ops/cpu/reduce_loops.h, which only per-ISA kernel files may
// include): pairwise blocks, row chunks. tests/test_jit_reduce.cpp's row lengths around them
// catch a divergence.
constexpr int64_t kPairBlock = 128;
constexpr int64_t kRowChunk = 65536;

void piece(std::vector<int64_t>& p, int64_t len, int64_t vec) {
  p.push_back(1);
  p.push_back(len);
  p.push_back(vec);
}

// Pairwise sum of `len` elements: halves at multiples of 8 down to blocks of <= kPairBlock.
void pairwise(std::vector<int64_t>& p, int64_t len) {
  if (len <= kPairBlock) {
    piece(p, len, len / 8 * 8);
    return;
  }
  const int64_t half = (len / 2 + 7) / 8 * 8;
  pairwise(p, half);
  pairwise(p, len - half);
  p.push_back(2);
}

// tree_combine's tree over chunks [c, c + size) of `count` (size a power of two).
template <class Leaf>
void chunk_tree(std::vector<int64_t>& p, int64_t c, int64_t size, int64_t count, const Leaf& leaf) {
  if (size == 1) {
    leaf(c);
    return;
  }
  const int64_t half = size / 2;
  chunk_tree(p, c, half, count, leaf);
  if (c + half < count) {
    chunk_tree(p, c + half, half, count, leaf);
    p.push_back(2);
  }
}

}  // namespace

int reduce_lanes(ExprOp op, DType t) {
  if (op == ExprOp::ReduceSum || op == ExprOp::ReduceProd) return 8;
  return t == DType::Float32 ? 8 : 4;
}

std::vector<int64_t> row_program(ExprOp op, DType type, int64_t n) {
  if (n == 0) return {1, 0, 0, 0};  // the identity: a piece of no elements
  std::vector<int64_t> p;
  const int64_t chunks = (n + kRowChunk - 1) / kRowChunk;
  int64_t size = 1;
  while (size < chunks) size *= 2;
  const int64_t lanes = reduce_lanes(op, type);
  chunk_tree(p, 0, size, chunks, [&](int64_t c) {
    const int64_t len = std::min(kRowChunk, n - c * kRowChunk);
    if (op == ExprOp::ReduceSum) {
      pairwise(p, len);
    } else if (op == ExprOp::ReduceProd) {
      piece(p, len, len / 8 * 8);
    } else {  // range_extreme: lanes only for at least two iterations of its two registers
      piece(p, len, len >= 2 * lanes ? len / lanes * lanes : 0);
    }
  });
  p.push_back(0);
  return p;
}

}  // namespace kiln::jit
