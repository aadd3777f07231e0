#include "jit/loop/row_program.h"

#include <algorithm>

namespace kiln::jit {

namespace {

// The eager kernels' constants (ops/cpu/reduce_loops.h, which only per-ISA kernel files may
// include): pairwise blocks, column runs (row and column chunks: kRowProgramChunk and
// kColRowChunk, row_program.h).
// tests/test_jit_reduce.cpp's row lengths around them catch a divergence.
constexpr int64_t kPairBlock = 128;
constexpr int64_t kColBlock = 64;

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

// col_block over `len` rows: halves at floor(len / 2) down to runs of at most kColBlock.
void col_block(std::vector<int64_t>& p, int64_t len) {
  if (len <= kColBlock) {
    piece(p, len, 0);
    return;
  }
  const int64_t half = len / 2;
  col_block(p, half);
  col_block(p, len - half);
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
  const int64_t chunks = (n + kRowProgramChunk - 1) / kRowProgramChunk;
  int64_t size = 1;
  while (size < chunks) size *= 2;
  const int64_t lanes = reduce_lanes(op, type);
  chunk_tree(p, 0, size, chunks, [&](int64_t c) {
    const int64_t len = std::min(kRowProgramChunk, n - c * kRowProgramChunk);
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

std::vector<int64_t> column_program(int64_t n) {
  if (n == 0) return {1, 0, 0, 0};
  std::vector<int64_t> p;
  const int64_t chunks = (n + kColRowChunk - 1) / kColRowChunk;
  int64_t size = 1;
  while (size < chunks) size *= 2;
  chunk_tree(p, 0, size, chunks,
             [&](int64_t c) { col_block(p, std::min(kColRowChunk, n - c * kColRowChunk)); });
  p.push_back(0);
  return p;
}

int64_t program_depth(const std::vector<int64_t>& p) {
  int64_t depth = 0, most = 0;
  for (size_t i = 0; i < p.size() && p[i] != 0;) {
    if (p[i] == 1) {
      most = std::max(most, ++depth);
      i += 3;
    } else {
      --depth;
      i += 1;
    }
  }
  return most;
}

}  // namespace kiln::jit
