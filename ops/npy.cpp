// NumPy .npy files (format versions 1.0, 2.0, 3.0; numpy/lib/format.py is the specification):
//   "\x93NUMPY" major minor, header length (uint16 LE in 1.0, uint32 LE in 2.0/3.0), then an
//   ASCII (3.0: UTF-8) Python dict literal {'descr': '<f4', 'fortran_order': False,
//   'shape': (2, 3), } padded with spaces and '\n' so the data starts at a multiple of 64,
//   then the raw elements.
// load_npy accepts the dtypes kiln has ('|b1', '<i4', '<i8', '<f4', '<f8'), either byte order
// ('>' is byte-swapped) and either memory order (fortran_order True is transposed back to the
// logical layout). save_npy writes little-endian C order in version 1.0 (2.0 when the header does
// not fit in 1.0's 16-bit length), byte-identical to numpy.save of the same array.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>

#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "runtime/lazy.h"

namespace kiln {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;

// ---- dtype codes ----

// The kiln dtype of a descr ('<f4'), and whether its bytes need swapping; nullopt if unknown.
std::optional<std::pair<DType, bool>> parse_descr(const std::string& d) {
  if (d.size() != 3) return std::nullopt;
  char order = d[0];
  std::string code = d.substr(1);
  std::optional<DType> t;
  if (code == "b1")
    t = DType::Bool;
  else if (code == "i4")
    t = DType::Int32;
  else if (code == "i8")
    t = DType::Int64;
  else if (code == "f4")
    t = DType::Float32;
  else if (code == "f8")
    t = DType::Float64;
  if (!t) return std::nullopt;
  const bool little_host = std::endian::native == std::endian::little;
  if (order == '|' || order == '=') return std::pair{*t, false};
  if (order == '<') return std::pair{*t, !little_host && itemsize(*t) > 1};
  if (order == '>') return std::pair{*t, little_host && itemsize(*t) > 1};
  return std::nullopt;
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::Bool:
      return "|b1";
    case DType::Int32:
      return "<i4";
    case DType::Int64:
      return "<i8";
    case DType::Float32:
      return "<f4";
    case DType::Float64:
      break;
  }
  return "<f8";
}

void byteswap_all(char* p, int64_t n, size_t size) {
  for (int64_t i = 0; i < n; ++i, p += size) std::reverse(p, p + size);
}

// ---- header dict parsing (the subset of Python literals numpy writes) ----

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  void parse(std::string& descr, bool& fortran, DimVector& shape) {
    bool has_descr = false, has_fortran = false, has_shape = false;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        skip_ws();
        if (peek() != '\'' && peek() != '"')
          error(fmt::format("unsupported dtype (structured or subarray descr '{}')", rest()));
        descr = string_literal(), has_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean(), has_fortran = true;
      } else if (key == "shape") {
        shape = tuple(), has_shape = true;
      } else {
        error(fmt::format("unexpected key '{}' in the header", key));
      }
      skip_ws();
      if (peek() == ',') ++pos_;
    }
    if (!has_descr || !has_fortran || !has_shape)
      error("the header lacks one of the keys 'descr', 'fortran_order', 'shape'");
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail("load_npy: '{}': malformed header: {} (header: {})", path_, what, s_);
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  std::string rest() const { return s_.substr(pos_, 40); }
  void expect(char c) {
    skip_ws();
    if (peek() != c) error(fmt::format("expected '{}' at offset {}", c, pos_));
    ++pos_;
  }
  std::string string_literal() {
    skip_ws();
    char q = peek();
    if (q != '\'' && q != '"') error(fmt::format("expected a string at offset {}", pos_));
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) error("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_ws();
    if (s_.compare(pos_, 4, "True") == 0) return pos_ += 4, true;
    if (s_.compare(pos_, 5, "False") == 0) return pos_ += 5, false;
    error(fmt::format("expected True or False for 'fortran_order' at offset {}", pos_));
  }
  DimVector tuple() {
    DimVector dims;
    expect('(');
    while (true) {
      skip_ws();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        error(fmt::format("expected a non-negative integer in 'shape' at offset {}", pos_));
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v > (INT64_MAX - 9) / 10) error("a dimension in 'shape' is too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      dims.push_back(v);
      skip_ws();
      if (peek() == ',')
        ++pos_;
      else if (peek() != ')')
        error(fmt::format("expected ',' or ')' at offset {}", pos_));
    }
    ++pos_;
    return dims;
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

Tensor load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  KILN_CHECK(f, "load_npy: cannot open '{}': {}", path, std::strerror(errno));
  auto read_exact = [&](char* dst, size_t n, const char* what) {
    f.read(dst, static_cast<std::streamsize>(n));
    KILN_CHECK(static_cast<size_t>(f.gcount()) == n,
               "load_npy: '{}': truncated file: {} needs {} bytes, only {} present", path, what, n,
               f.gcount());
  };

  char pre[kMagicLen + 2];
  read_exact(pre, sizeof(pre), "the magic string and version");
  KILN_CHECK(std::memcmp(pre, kMagic, kMagicLen) == 0,
             "load_npy: '{}': not a .npy file (bad magic string; expected \\x93NUMPY)", path);
  const int major = static_cast<unsigned char>(pre[kMagicLen]);
  const int minor = static_cast<unsigned char>(pre[kMagicLen + 1]);
  KILN_CHECK((major == 1 || major == 2 || major == 3) && minor == 0,
             "load_npy: '{}': unsupported format version {}.{} (1.0, 2.0 and 3.0 are known)", path,
             major, minor);
  unsigned char lenbuf[4] = {0, 0, 0, 0};
  const size_t lenbytes = major == 1 ? 2 : 4;
  read_exact(reinterpret_cast<char*>(lenbuf), lenbytes, "the header length");
  const size_t hlen =
      lenbuf[0] | lenbuf[1] << 8 | size_t(lenbuf[2]) << 16 | size_t(lenbuf[3]) << 24;
  std::string header(hlen, '\0');
  read_exact(header.data(), hlen, "the header");

  std::string descr;
  bool fortran = false;
  DimVector shape;
  HeaderParser(header, path).parse(descr, fortran, shape);
  auto dt = parse_descr(descr);
  KILN_CHECK(dt,
             "load_npy: '{}': unsupported dtype '{}' (kiln reads |b1, <i4, <i8, <f4, <f8 and "
             "their big-endian forms)",
             path, descr);
  auto [dtype, swap] = *dt;

  // The data is stored in the file's memory order: C order of the shape, or C order of the
  // reversed shape for fortran_order.
  DimVector stored = shape;
  if (fortran) std::reverse(stored.begin(), stored.end());
  int64_t n = 1;
  for (int64_t s : shape) {
    KILN_CHECK(s == 0 || n <= INT64_MAX / s / 8, "load_npy: '{}': shape {} is too large", path,
               shape_str(shape));
    n *= s;
  }
  const size_t nbytes = static_cast<size_t>(n) * itemsize(dtype);
  // Compare with the bytes actually present before allocating, so a corrupt header cannot ask
  // for a huge buffer.
  const std::streamoff data_start = f.tellg();
  f.seekg(0, std::ios::end);
  const std::streamoff file_end = f.tellg();
  f.seekg(data_start);
  KILN_CHECK(f && data_start >= 0 && file_end >= data_start,
             "load_npy: '{}': cannot determine the size of the file", path);
  const size_t present = static_cast<size_t>(file_end - data_start);
  KILN_CHECK(present >= nbytes,
             "load_npy: '{}': truncated data: shape {} of '{}' needs {} bytes, the file has {}",
             path, shape_str(shape), descr, nbytes, present);
  KILN_CHECK(present == nbytes,
             "load_npy: '{}': size mismatch: shape {} of '{}' needs {} bytes of data, the file "
             "has {}",
             path, shape_str(shape), descr, nbytes, present);
  Tensor t = empty_tensor(stored, dtype, Device::cpu());
  char* data = static_cast<char*>(t.impl()->data());
  f.read(data, static_cast<std::streamsize>(nbytes));
  KILN_CHECK(static_cast<size_t>(f.gcount()) == nbytes, "load_npy: '{}': read error: {}", path,
             std::strerror(errno));

  if (swap) byteswap_all(data, n, itemsize(dtype));
  if (dtype == DType::Bool) {
    // numpy bools are 0/1, but normalize any other byte so kiln's kernels can rely on it.
    for (int64_t i = 0; i < n; ++i) data[i] = data[i] != 0;
  }
  if (fortran && t.dim() > 1) {
    DimVector perm;
    for (int64_t d = t.dim() - 1; d >= 0; --d) perm.push_back(d);
    t = t.permute(perm).contiguous();
  }
  return t;
}

void save_npy(const std::string& path, const Tensor& tensor) {
  KILN_CHECK(tensor.defined(), "save_npy: the tensor is undefined (writing '{}')", path);
  KILN_CHECK(tensor.device().is_cpu(),
             "save_npy: '{}': the tensor is on {}; move it to the CPU first", path,
             tensor.device());
  Tensor t = tensor.contiguous();
  sync_point(t, SyncReason::Save);
  const TensorImpl* x = t.impl();

  // numpy.lib.format._write_array_header: sorted keys, repr() of the shape, then spaces so the
  // first axis can grow to 21 digits in place, then padding to kAlign and a newline.
  std::string shape = "(";
  for (int64_t d = 0; d < x->dim(); ++d) shape += fmt::format("{}{}", d ? ", " : "", x->sizes()[d]);
  shape += x->dim() == 1 ? ",)" : ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   descr_of(x->dtype()), shape);
  if (x->dim() > 0) {
    const size_t digits = fmt::format("{}", x->sizes()[0]).size();
    header.append(21 - std::min<size_t>(digits, 21), ' ');
  }
  int major = 1;
  size_t lenbytes = 2;
  size_t hlen = header.size() + 1;  // + '\n'
  size_t pad = kAlign - (kMagicLen + 2 + lenbytes + hlen) % kAlign;
  if (hlen + pad > 65535) {
    major = 2, lenbytes = 4;
    pad = kAlign - (kMagicLen + 2 + lenbytes + hlen) % kAlign;
  }
  // Like numpy, a header that is already aligned still gets kAlign bytes of padding.
  header.append(pad, ' ');
  header += '\n';

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  KILN_CHECK(f, "save_npy: cannot open '{}' for writing: {}", path, std::strerror(errno));
  f.write(kMagic, kMagicLen);
  const char ver[2] = {static_cast<char>(major), 0};
  f.write(ver, 2);
  const uint32_t len = static_cast<uint32_t>(header.size());
  const char lenb[4] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8 & 0xff),
                        static_cast<char>(len >> 16 & 0xff), static_cast<char>(len >> 24)};
  f.write(lenb, static_cast<std::streamsize>(lenbytes));
  f.write(header.data(), static_cast<std::streamsize>(header.size()));

  const size_t nbytes = static_cast<size_t>(x->numel()) * itemsize(x->dtype());
  const char* data = static_cast<const char*>(x->data());
  if (std::endian::native == std::endian::little || itemsize(x->dtype()) == 1) {
    f.write(data, static_cast<std::streamsize>(nbytes));
  } else {
    std::string swapped(data, nbytes);
    byteswap_all(swapped.data(), x->numel(), itemsize(x->dtype()));
    f.write(swapped.data(), static_cast<std::streamsize>(nbytes));
  }
  f.flush();
  KILN_CHECK(f, "save_npy: error while writing '{}': {}", path, std::strerror(errno));
}

}  // namespace kiln
