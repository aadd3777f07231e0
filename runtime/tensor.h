// Tensor: the user's handle (API.md). Copying a Tensor copies a reference; views share storage.
// Geometry accessors live in runtime/tensor.cpp; the op methods are defined in ops/ next to the
// free functions they forward to.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/int_list.h"
#include "runtime/ref.h"
#include "runtime/scalar.h"
#include "runtime/tensor_impl.h"
#include "runtime/tensor_options.h"

namespace kiln {

using Shape = std::vector<int64_t>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const Ref<TensorImpl>& impl_ref() const { return impl_; }

  // ---- metadata (raise kiln::Error on an undefined tensor) ----
  int64_t dim() const;
  Shape sizes() const;
  int64_t size(int64_t d) const;
  Shape strides() const;
  int64_t stride(int64_t d) const;
  int64_t numel() const;
  DType dtype() const;
  DType scalar_type() const { return dtype(); }
  Device device() const;
  bool is_contiguous() const;
  int64_t storage_offset() const;
  TensorOptions options() const;
  // Same storage (views of one another or the same tensor).
  bool is_same_storage(const Tensor& o) const;
  uint32_t version() const;  // bumped by every in-place write to the storage

  // ---- data access: sync points ----
  template <class T>
  T item() const;
  template <class T>
  std::vector<T> to_vector() const;
  template <class T>
  const T* data_ptr() const;
  template <class T>
  T* mutable_data_ptr();
  const void* raw_data() const;

  // ---- conversions ----
  Tensor to(Device d) const;
  Tensor to(DType t) const;
  Tensor contiguous() const;
  Tensor clone() const;

  // ---- views (share storage) ----
  Tensor view(IntList shape) const;
  Tensor reshape(IntList shape) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor permute(IntList dims) const;
  Tensor t() const;
  Tensor unsqueeze(int64_t d) const;
  Tensor squeeze(int64_t d) const;
  Tensor squeeze() const;
  Tensor expand(IntList shape) const;
  Tensor expand_as(const Tensor& o) const;
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor operator[](int64_t i) const;

  // ---- autograd (runtime/autograd/) ----
  Tensor& requires_grad_(bool on = true);
  bool requires_grad() const;
  bool is_leaf() const;
  Tensor grad() const;               // accumulated gradient of a leaf; undefined if none
  Tensor& mutable_grad();            // the leaf's gradient slot (optimizers reset it)
  std::string grad_fn_name() const;  // e.g. "MulBackward"; empty for leaves
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;
  Tensor detach() const;  // shares storage, no autograd history

  // ---- in place (return *this; bump the version counter) ----
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& mul_(const Tensor& o);
  Tensor& div_(const Tensor& o);
  Tensor& add_(const Scalar& s);
  Tensor& sub_(const Scalar& s);
  Tensor& mul_(const Scalar& s);
  Tensor& div_(const Scalar& s);
  Tensor& zero_();
  Tensor& fill_(const Scalar& v);
  Tensor& copy_(const Tensor& src);
  Tensor& clamp_(double lo, double hi);
  Tensor& relu_();
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);

  // ---- method forms of the free functions (ops/functions.h) ----
  Tensor add(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;
  Tensor neg() const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor log1p() const;
  Tensor expm1() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor silu() const;
  Tensor erf() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor sign() const;
  Tensor square() const;
  Tensor pow(const Scalar& e) const;
  Tensor pow(const Tensor& e) const;
  Tensor clamp(double lo, double hi) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor gelu(const std::string& approximate = "none") const;
  Tensor isnan() const;
  Tensor logical_not() const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;

  Tensor sum() const;
  Tensor sum(IntList dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(IntList dims, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(IntList dims, bool keepdim = false) const;
  Tensor amax() const;
  Tensor amax(IntList dims, bool keepdim = false) const;
  Tensor amin() const;
  Tensor amin(IntList dims, bool keepdim = false) const;
  Tensor logsumexp(IntList dims, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  Tensor var(IntList dims, bool unbiased = true, bool keepdim = false) const;
  Tensor std(IntList dims, bool unbiased = true, bool keepdim = false) const;
  Tensor all() const;
  Tensor any() const;

  Tensor matmul(const Tensor& o) const;
  Tensor mm(const Tensor& o) const;
  Tensor bmm(const Tensor& o) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor tril(int64_t k = 0) const;
  Tensor triu(int64_t k = 0) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  std::vector<Tensor> split(int64_t size, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;

  std::string str() const;  // the text operator<< prints

 private:
  const TensorImpl& checked(const char* op) const;  // the error names the op
  Ref<TensorImpl> impl_;
};

// Arithmetic and comparison operators (also with a Scalar on either side).
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Scalar& b);
Tensor& operator-=(Tensor& a, const Scalar& b);
Tensor& operator*=(Tensor& a, const Scalar& b);
Tensor& operator/=(Tensor& a, const Scalar& b);

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Formats a shape as [2, 3] for error messages.
std::string shape_str(IntList sizes);

}  // namespace kiln
