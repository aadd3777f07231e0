// Tensor metadata accessors. Op methods are defined in ops/tensor_methods.cpp.
#include "runtime/tensor.h"

#include <fmt/format.h>

#include "runtime/error.h"

namespace kiln {

namespace {
int64_t wrap_dim_for(const char* what, int64_t d, int64_t ndim) {
  int64_t n = ndim == 0 ? 1 : ndim;
  KILN_CHECK(d >= -n && d < n, "{}: dimension {} is out of range for a tensor of {} dims", what, d,
             ndim);
  return d < 0 ? d + n : d;
}
}  // namespace

std::string shape_str(IntList sizes) { return fmt::format("[{}]", fmt::join(sizes, ", ")); }

const TensorImpl& Tensor::checked(const char* op) const {
  KILN_CHECK(impl_, "{}: the tensor is undefined (default-constructed)", op);
  return *impl_;
}

int64_t Tensor::dim() const { return checked("dim").dim(); }
Shape Tensor::sizes() const { return checked("sizes").sizes().vec(); }
Shape Tensor::strides() const { return checked("strides").strides().vec(); }
int64_t Tensor::size(int64_t d) const {
  const TensorImpl& t = checked("size");
  KILN_CHECK(t.dim() > 0, "size: a 0-dim tensor has no dimension {}", d);
  return t.sizes()[wrap_dim_for("size", d, t.dim())];
}
int64_t Tensor::stride(int64_t d) const {
  const TensorImpl& t = checked("stride");
  KILN_CHECK(t.dim() > 0, "stride: a 0-dim tensor has no dimension {}", d);
  return t.strides()[wrap_dim_for("stride", d, t.dim())];
}
int64_t Tensor::numel() const { return checked("numel").numel(); }
DType Tensor::dtype() const { return checked("dtype").dtype(); }
Device Tensor::device() const { return checked("device").device(); }
bool Tensor::is_contiguous() const { return checked("is_contiguous").is_contiguous(); }
int64_t Tensor::storage_offset() const { return checked("storage_offset").offset(); }
TensorOptions Tensor::options() const { return TensorOptions().dtype(dtype()).device(device()); }
bool Tensor::is_same_storage(const Tensor& o) const {
  return defined() && o.defined() && impl_->storage() == o.impl_->storage();
}
uint32_t Tensor::version() const { return checked("version").storage()->version(); }

}  // namespace kiln
