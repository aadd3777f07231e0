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

int64_t word_of(const void* address) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(address));
}

void pieces_of_chunk(std::vector<int64_t>& p, ExprOp op, DType type, int64_t len);

// The pieces of a whole chunk, ending in 0: one program per op and type, made on first use and
// kept (launches on any thread read them).
const std::vector<int64_t>& full_chunk_program(ExprOp op, DType type) {
  static const auto* programs = [] {
    auto* all = new std::vector<std::vector<int64_t>>();
    for (ExprOp o : {ExprOp::ReduceSum, ExprOp::ReduceProd, ExprOp::ReduceMax, ExprOp::ReduceMin})
      for (DType t : {DType::Float32, DType::Float64}) {
        std::vector<int64_t> p;
        pieces_of_chunk(p, o, t, kRowProgramChunk);
        p.push_back(0);
        all->push_back(std::move(p));
      }
    return all;
  }();
  // The pieces depend on the type only through its lanes (reduce_lanes): an Int64 sum's are a
  // Float32 sum's.
  type =
      reduce_lanes(op, type) == reduce_lanes(op, DType::Float32) ? DType::Float32 : DType::Float64;
  const int o = op == ExprOp::ReduceSum    ? 0
                : op == ExprOp::ReduceProd ? 1
                : op == ExprOp::ReduceMax  ? 2
                                           : 3;
  return (*programs)[static_cast<size_t>(o * 2 + (type == DType::Float64 ? 1 : 0))];
}

// Chunk c of a row of n elements, as eager's range() reduces it: a whole chunk by a call of its
// shared program (a row of one chunk keeps its pieces inline).
void chunk_pieces(std::vector<int64_t>& p, ExprOp op, DType type, int64_t n, int64_t c) {
  const int64_t len = std::min(kRowProgramChunk, n - c * kRowProgramChunk);
  if (len == kRowProgramChunk && n > kRowProgramChunk) {
    p.push_back(5);
    p.push_back(word_of(full_chunk_program(op, type).data()));
    return;
  }
  pieces_of_chunk(p, op, type, len);
}

void pieces_of_chunk(std::vector<int64_t>& p, ExprOp op, DType type, int64_t len) {
  if (op == ExprOp::ReduceSum) {
    pairwise(p, len);
  } else if (op == ExprOp::ReduceProd) {
    piece(p, len, len / 8 * 8);
  } else {  // range_extreme: lanes only for at least two iterations of its two registers
    const int64_t lanes = reduce_lanes(op, type);
    piece(p, len, len >= 2 * lanes ? len / lanes * lanes : 0);
  }
}

// tree_combine's tree over the row's chunks, leaf(c) for each.
template <class Leaf>
std::vector<int64_t> chunk_program(int64_t n, const Leaf& leaf) {
  std::vector<int64_t> p;
  const int64_t chunks = row_chunks(n);
  int64_t size = 1;
  while (size < chunks) size *= 2;
  chunk_tree(p, 0, size, chunks, [&](int64_t c) { leaf(p, c); });
  p.push_back(0);
  return p;
}

}  // namespace

int reduce_lanes(ExprOp op, DType t) {
  if (op == ExprOp::ReduceSum || op == ExprOp::ReduceProd) return 8;
  return t == DType::Float32 ? 8 : 4;
}

int64_t row_chunks(int64_t n) {
  return std::max<int64_t>(1, (n + kRowProgramChunk - 1) / kRowProgramChunk);
}

std::vector<int64_t> row_program(ExprOp op, DType type, int64_t n) {
  if (n == 0) return {1, 0, 0, 0};  // the identity: a piece of no elements
  return chunk_program(
      n, [&](std::vector<int64_t>& p, int64_t c) { chunk_pieces(p, op, type, n, c); });
}

std::vector<int64_t> row_program_chunks(ExprOp op, DType type, int64_t n, int64_t c0, int64_t c1,
                                        uint64_t* slots) {
  std::vector<int64_t> p;
  for (int64_t c = c0; c < c1; ++c) {
    chunk_pieces(p, op, type, n, c);
    p.push_back(4);
    p.push_back(word_of(slots + (c - c0)));
  }
  p.push_back(0);  // (the row's value, the last chunk's: a dummy the launcher discards)
  return p;
}

std::vector<int64_t> row_program_partials(int64_t n, const uint64_t* slots) {
  return chunk_program(n, [&](std::vector<int64_t>& p, int64_t c) {
    p.push_back(3);
    p.push_back(word_of(slots + c));
  });
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

std::vector<int64_t> column_program_chunks(int64_t n, int64_t c0, int64_t c1, char* slots,
                                           int64_t slot_bytes) {
  std::vector<int64_t> p;
  for (int64_t c = c0; c < c1; ++c) {
    col_block(p, std::min(kColRowChunk, n - c * kColRowChunk));
    p.push_back(4);
    p.push_back(word_of(slots + (c - c0) * slot_bytes));
  }
  p.push_back(0);  // (the row values from a popped level: a dummy the launcher discards)
  return p;
}

std::vector<int64_t> column_program_partials(int64_t n, const char* slots, int64_t slot_bytes,
                                             char* keep) {
  std::vector<int64_t> p;
  const int64_t chunks = (n + kColRowChunk - 1) / kColRowChunk;
  int64_t size = 1;
  while (size < chunks) size *= 2;
  chunk_tree(p, 0, size, chunks, [&](int64_t c) {
    p.push_back(3);
    p.push_back(word_of(slots + c * slot_bytes));
  });
  if (keep != nullptr) {
    p.push_back(4);
    p.push_back(word_of(keep));
  }
  p.push_back(0);
  return p;
}

std::vector<int64_t> column_program_pushing(const char* level) { return {3, word_of(level), 0}; }

namespace {
void walk_depth(const int64_t* p, int64_t& depth, int64_t& most) {
  for (size_t i = 0; p[i] != 0;) {
    switch (p[i]) {
      case 1:  // a piece
      case 3:  // a pushed partial
        most = std::max(most, ++depth);
        i += p[i] == 1 ? 3 : 2;
        break;
      case 5:  // a call
        walk_depth(reinterpret_cast<const int64_t*>(static_cast<uintptr_t>(p[i + 1])), depth, most);
        i += 2;
        break;
      default:  // a combine, a popped partial
        --depth;
        i += p[i] == 4 ? 2 : 1;
    }
  }
}
}  // namespace

int64_t program_depth(const std::vector<int64_t>& p) {
  int64_t depth = 0, most = 0;
  if (!p.empty()) walk_depth(p.data(), depth, most);
  return most;
}

}  // namespace kiln::jit
