#include "fuzz/pool.h"
#include <array>
#include <cstring>

#include <sstream>

namespace kiln::fuzz {

bool broadcast_too_big(const Shape& a, const Shape& b) {
  double n = 1;
  for (size_t i = 1; i <= std::max(a.size(), b.size()); ++i) {
    const int64_t x = i <= a.size() ? a[a.size() - i] : 1, y = i <= b.size() ? b[b.size() - i] : 1;
    n *= static_cast<double>(std::max(x, y));
  }
  return n > kMaxElements;
}

bool broadcastable(const Shape& a, const Shape& b) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t x = a[a.size() - i], y = b[b.size() - i];
    if (x != y && x != 1 && y != 1) return false;
  }
  return !broadcast_too_big(a, b);
}

bool broadcasts_to(const Shape& src, const Shape& dst) {
  if (src.size() > dst.size()) return false;
  for (size_t i = 1; i <= src.size(); ++i) {
    const int64_t x = src[src.size() - i];
    if (x != dst[dst.size() - i] && x != 1) return false;
  }
  return true;
}

int pick_any(const Pool& pool, uint32_t r) {
  return pick(pool, r, [](const Tensor&) { return true; });
}

std::string slot_name(int i) {
  std::string s = "t";  // built in two steps: GCC 12 warns (-Wrestrict) on "t" + to_string(i)
  s += std::to_string(i);
  return s;
}

std::string show(const Tensor& t) {
  std::ostringstream o;
  o << dtype_name(t.dtype()) << shape_str(t.sizes());
  if (!t.is_contiguous() || t.storage_offset() != 0)
    o << "{strides=" << shape_str(t.strides()) << ",off=" << t.storage_offset() << "}";
  return o.str();
}

std::string hex(const void* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    s += digits[b[i] >> 4];
    s += digits[b[i] & 15];
  }
  return s;
}

// The bytes of one element, with every NaN of a floating dtype written as the positive quiet NaN:
// the numerical contract (docs/numerics.md) leaves the sign and payload of NaNs open (x86 passes
// on the first operand's NaN, and compilers order commutative operands freely).
std::array<char, 8> canonical_nan(const char* p, DType d) {
  std::array<char, 8> b{};
  std::memcpy(b.data(), p, itemsize(d));
  if (d == DType::Float32) {
    float f;
    std::memcpy(&f, p, 4);
    if (f != f) std::memcpy(b.data(), "\x00\x00\xc0\x7f", 4);
  } else if (d == DType::Float64) {
    double x;
    std::memcpy(&x, p, 8);
    if (x != x) std::memcpy(b.data(), "\x00\x00\x00\x00\x00\x00\xf8\x7f", 8);
  }
  return b;
}

std::string byte_string(const Tensor& t) {
  const auto* base = static_cast<const char*>(t.raw_data());
  const size_t item = itemsize(t.dtype());
  const Shape sz = t.sizes(), st = t.strides();
  std::string out;
  std::vector<int64_t> idx(sz.size(), 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < sz.size(); ++d) off += idx[d] * st[d];
    out += hex(canonical_nan(base + off * static_cast<int64_t>(item), t.dtype()).data(), item);
    for (int64_t d = static_cast<int64_t>(sz.size()) - 1; d >= 0 && ++idx[d] == sz[d]; --d)
      idx[d] = 0;
  }
  return out;
}

std::string read_value(const Tensor& t) {
  return visit_dtype(t.dtype(), [&]<class T>(TypeTag<T>) -> std::string {
    if (t.numel() == 1) {
      T v = t.item<T>();
      return "item " +
             hex(canonical_nan(reinterpret_cast<const char*>(&v), t.dtype()).data(), sizeof v);
    }
    std::string s = "vector ";
    for (T v : t.to_vector<T>())
      s += hex(canonical_nan(reinterpret_cast<const char*>(&v), t.dtype()).data(), sizeof v) + " ";
    return s;
  });
}

Tensor make_leaf(const Step& s) {
  return visit_dtype(s.dtype, [&]<class T>(TypeTag<T>) {
    std::vector<T> v;
    for (double x : s.data) v.push_back(static_cast<T>(x));
    return from_vector<T>(v, s.shape);
  });
}

std::string sc(const Scalar& s) {
  std::ostringstream o;
  if (s.category() == DTypeCategory::Bool)
    o << (s.to_int() ? "true" : "false");
  else if (s.category() == DTypeCategory::Integral)
    o << s.to_int();
  else
    o << s.to_double() << "(f)";
  return o.str();
}

}  // namespace kiln::fuzz
