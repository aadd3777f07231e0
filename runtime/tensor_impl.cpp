#include "runtime/tensor_impl.h"

#include "runtime/autograd/autograd_meta.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace kiln {

namespace {

// The element count, or -1 when it overflows int64 (a zero size makes it 0 whatever the rest).
int64_t checked_numel(std::span<const int64_t> sizes) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    if (s == 0) return 0;
    overflow |= __builtin_mul_overflow(n, s, &n);
  }
  return overflow ? -1 : n;
}

}  // namespace

int64_t numel_of(const DimVector& sizes) {
  const int64_t n = checked_numel(sizes);
  KILN_CHECK(n >= 0, "a tensor of shape {} would have more elements than an int64 can count",
             shape_str(sizes));
  return n;
}

void check_shape_size_slow(const char* op, std::span<const int64_t> sizes, DType dtype,
                           bool bytes_too) {
  const int64_t n = checked_numel(sizes);
  int64_t bytes = 0;
  KILN_CHECK(n >= 0 && (!bytes_too ||
                        !__builtin_mul_overflow(n, static_cast<int64_t>(itemsize(dtype)), &bytes)),
             "{}: a {} tensor of shape {} is too large (its {} overflows int64)", op, dtype,
             shape_str(IntList(sizes.data(), sizes.size())),
             n < 0 ? "number of elements" : "size in bytes");
}

DimVector contiguous_strides(const DimVector& sizes) {
  DimVector st(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = acc;
    acc *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return st;
}

bool is_contiguous_layout(const DimVector& sizes, const DimVector& strides) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 0) return true;
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

bool has_fresh_layout(const TensorImpl& t) {
  if (t.offset() != 0) return false;
  const DimVector& sizes = t.sizes();
  const DimVector& strides = t.strides();
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {  // as contiguous_strides(), without building it
    if (strides[i] != expected) return false;
    expected *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return true;
}

TensorImpl::TensorImpl(DimVector sizes, DimVector strides, int64_t offset, DType dtype,
                       Device device, Ref<Storage> storage)
    : sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(offset),
      numel_(numel_of(sizes_)),
      dtype_(dtype),
      device_(device),
      contiguous_(is_contiguous_layout(sizes_, strides_)),
      storage_(std::move(storage)) {}

TensorImpl::TensorImpl(const DimVector& sizes, DType dtype, Device device, Ref<Storage> storage)
    : sizes_(sizes),
      strides_(sizes.size()),
      offset_(0),
      dtype_(dtype),
      device_(device),
      contiguous_(true),
      storage_(std::move(storage)) {
  int64_t acc = 1;
  bool empty = false;
  for (size_t i = sizes_.size(); i-- > 0;) {
    strides_[i] = acc;
    acc *= sizes_[i] > 1 ? sizes_[i] : 1;
    empty = empty || sizes_[i] == 0;
  }
  numel_ = empty ? 0 : acc;
}

TensorImpl::~TensorImpl() = default;

AutogradMeta& TensorImpl::ensure_autograd() {
  if (!autograd_) autograd_ = std::make_unique<AutogradMeta>();
  return *autograd_;
}

bool TensorImpl::requires_grad_slow() const {
  return autograd_->requires_grad || static_cast<bool>(autograd_->grad_fn);
}

}  // namespace kiln
