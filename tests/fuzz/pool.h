// The fuzzer's tensor pool: picking operands by metadata, and rendering tensors and values as
// text (bytes in hex) so that two runs can be compared exactly.
#pragma once
#include <string>
#include <vector>

#include "fuzz/program.h"

namespace kiln::fuzz {

using Pool = std::vector<Tensor>;

// The most elements a step may make: programs above the parallel grain have dims of ~15000, and
// broadcasting a [n, 1] against a [1, n] (or a matmul of [n, k] by [k, n]) would need gigabytes.
constexpr double kMaxElements = 1 << 22;
bool broadcast_too_big(const Shape& a, const Shape& b);
// Shapes that broadcast together into at most kMaxElements elements.
bool broadcastable(const Shape& a, const Shape& b);
bool broadcasts_to(const Shape& src, const Shape& dst);

// The (r mod count)-th defined slot that satisfies `ok`, or -1.
template <class F>
int pick(const Pool& pool, uint32_t r, F&& ok) {
  std::vector<int> c;
  for (int i = 0; i < static_cast<int>(pool.size()); ++i)
    if (pool[i].defined() && ok(pool[i])) c.push_back(i);
  return c.empty() ? -1 : c[r % c.size()];
}
int pick_any(const Pool& pool, uint32_t r);

std::string slot_name(int i);
// dtype and sizes, plus strides and offset when not row-major from offset 0.
std::string show(const Tensor& t);
std::string hex(const void* p, size_t n);
// Element bytes of t in row-major logical order, read through its own strides.
std::string byte_string(const Tensor& t);
// An item (one element) or to_vector read of t, in hex (a sync point).
std::string read_value(const Tensor& t);
Tensor make_leaf(const Step& s);
// A scalar as the listing shows it.
std::string sc(const Scalar& s);

}  // namespace kiln::fuzz
