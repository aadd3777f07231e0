// Tensor printing in PyTorch's style: tensor([[1.0000, 2.0000],\n        [3.0000, 4.0000]]).
// All elements share one width (right-aligned); floats use 4 decimals, or scientific notation
// when the magnitudes call for it; tensors over 1000 elements show 3 edge items per dim around
// "..."; a suffix names a non-default dtype (defaults: Float32, Int64, Bool), a CUDA device and
// the size of an empty tensor whose shape is not [0]. Printing reads data (a sync point).
#include <cmath>
#include <map>
#include <ostream>
#include <sstream>
#include <vector>

#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "runtime/lazy.h"

namespace kiln {

namespace {

constexpr int64_t kSummarizeThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

// The printed indices of one dim: all, or the first and last kEdgeItems (-1 marks the "...").
std::vector<int64_t> shown_indices(int64_t size, bool summarize) {
  std::vector<int64_t> idx;
  if (summarize && size > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
    idx.push_back(-1);
    for (int64_t i = size - kEdgeItems; i < size; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < size; ++i) idx.push_back(i);
  }
  return idx;
}

// Formats the shown elements as strings of one common width.
class Formatter {
 public:
  explicit Formatter(const std::vector<double>& floats) {
    double lo = INFINITY, hi = 0;
    for (double v : floats) {
      if (!std::isfinite(v) || v == 0) continue;
      lo = std::min(lo, std::fabs(v));
      hi = std::max(hi, std::fabs(v));
    }
    // PyTorch's rule: scientific when the range is wide or the values very large or small.
    sci_ = hi > 0 && (hi / lo > 1000.0 || hi > 1e8 || lo < 1e-4);
  }

  std::string format_float(double v) const {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return sci_ ? fmt::format("{:.4e}", v) : fmt::format("{:.4f}", v);
  }

 private:
  bool sci_ = false;
};

class Printer {
 public:
  // A CUDA tensor is printed from a host copy (a sync point).
  explicit Printer(const Tensor& t) : t_(t.contiguous().to(Device::cpu())), impl_(t_.impl()) {
    summarize_ = impl_->numel() > kSummarizeThreshold;
    strides_ = impl_->strides();
    for (int64_t d = 0; d < impl_->dim(); ++d)
      shown_.push_back(shown_indices(impl_->sizes()[d], summarize_));
    // Format every shown element once, then pad to the widest.
    std::vector<int64_t> offsets;
    collect(0, 0, offsets);
    std::vector<double> floats;
    if (is_floating(impl_->dtype()))
      for (int64_t off : offsets) floats.push_back(value_as_double(off));
    Formatter f(floats);
    for (int64_t off : offsets) {
      std::string s = element(f, off);
      width_ = std::max<int64_t>(width_, static_cast<int64_t>(s.size()));
      text_.emplace(off, std::move(s));
    }
  }

  // The body between "tensor(" and the suffix, with rows indented by `indent` columns.
  std::string body(int64_t indent) const {
    if (impl_->dim() == 0) return text_.at(0);
    std::string out;
    write(0, 0, indent, out);
    return out;
  }

 private:
  void collect(int64_t d, int64_t off, std::vector<int64_t>& offsets) const {
    if (d == impl_->dim()) {
      offsets.push_back(off);
      return;
    }
    for (int64_t i : shown_[d])
      if (i >= 0) collect(d + 1, off + i * strides_[d], offsets);
  }

  double value_as_double(int64_t off) const {
    return visit_dtype(impl_->dtype(), [&]<class T>(TypeTag<T>) {
      return static_cast<double>(static_cast<const T*>(impl_->data())[off]);
    });
  }

  std::string element(const Formatter& f, int64_t off) const {
    return visit_dtype(impl_->dtype(), [&]<class T>(TypeTag<T>) -> std::string {
      T v = static_cast<const T*>(impl_->data())[off];
      if constexpr (std::is_same_v<T, bool>)
        return v ? "True" : "False";
      else if constexpr (std::is_floating_point_v<T>)
        return f.format_float(static_cast<double>(v));
      else
        return fmt::format("{}", v);
    });
  }

  std::string padded(int64_t off) const {
    const std::string& s = text_.at(off);
    return std::string(width_ - static_cast<int64_t>(s.size()), ' ') + s;
  }

  // Writes "[...]" for dim d at element offset `off`; `indent` is the column of its "[".
  void write(int64_t d, int64_t off, int64_t indent, std::string& out) const {
    out += '[';
    const std::vector<int64_t>& idx = shown_[d];
    const bool last_dim = d + 1 == impl_->dim();
    // Elements per line of the innermost dim, so long rows wrap at kLineWidth.
    const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent - 1) / (width_ + 2));
    for (size_t k = 0; k < idx.size(); ++k) {
      if (k > 0) {
        out += ',';
        // A row break: one newline per dim below this one (blank lines between matrices).
        const size_t breaks = last_dim ? (k % per_line == 0 ? 1 : 0) : size_t(impl_->dim() - d - 1);
        if (breaks == 0) {
          out += ' ';
        } else {
          out.append(breaks, '\n');
          out.append(static_cast<size_t>(indent + 1), ' ');
        }
      }
      if (idx[k] < 0) {
        out += "...";
        continue;
      }
      int64_t o = off + idx[k] * strides_[d];
      if (last_dim)
        out += padded(o);
      else
        write(d + 1, o, indent + 1, out);
    }
    out += ']';
  }

  Tensor t_;
  const TensorImpl* impl_;
  bool summarize_ = false;
  DimVector strides_;
  std::vector<std::vector<int64_t>> shown_;
  std::map<int64_t, std::string> text_;
  int64_t width_ = 0;
};

std::string suffix(const Tensor& t) {
  std::vector<std::string> parts;
  const TensorImpl* x = t.impl();
  if (x->numel() == 0 && !(x->dim() == 1 && x->sizes()[0] == 0))
    parts.push_back(fmt::format("size=({})", fmt::join(x->sizes(), ", ")));
  if (x->dtype() != DType::Float32 && x->dtype() != DType::Int64 && x->dtype() != DType::Bool)
    parts.push_back(fmt::format("dtype={}", x->dtype()));
  if (x->device().is_cuda()) parts.push_back(fmt::format("device='{}'", x->device()));
  std::string s;
  for (const std::string& p : parts) s += ", " + p;
  return s;
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  sync_point(*this, SyncReason::Print);
  std::string body = impl_->numel() == 0 ? "[]" : Printer(*this).body(7);  // 7 = "tensor("
  return "tensor(" + body + suffix(*this) + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace kiln
