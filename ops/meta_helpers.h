// Shared pieces of meta functions: broadcasting, PyTorch type promotion, dim wrapping and the
// checks whose error messages name the op, the shapes and the dtypes.
#pragma once
#include <span>
#include <string>

#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace kiln {

// "[2, 3] Float32" for messages.
std::string describe(const Tensor& t);

// Wraps a possibly negative dim into [0, ndim); a 0-dim tensor accepts -1 and 0.
int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim);
// Wraps and deduplicates a dims list; an empty list means every dim. Returns a bitmask.
uint64_t dims_mask(const char* op, IntList dims, int64_t ndim);

// Broadcast shape of two or more shapes (NumPy rules), or a kiln::Error naming the op.
DimVector broadcast_shapes(const char* op, const DimVector& a, const DimVector& b);
DimVector broadcast_all(const char* op, std::span<const Tensor> ts);

// PyTorch's result_type: tensors with dims outrank 0-dim tensors, which outrank scalars; a
// lower-priority operand only matters when it is of a higher category (bool < int < float), and
// then it raises to the default dtype of that category (Int64 / Float32) unless a same-priority
// tensor already has that category.
class ResultType {
 public:
  void add(const Tensor& t);
  void add(const Scalar& s);
  // A tensor by its metadata (lowering passes see no tensors): its dtype and whether it is 0-dim.
  void add(DType d, bool zero_dim);
  DType get() const;

 private:
  static DType merge(DType cur, bool has, DType t) { return has ? promote_types(cur, t) : t; }
  DType dim_ = DType::Bool, zero_ = DType::Bool, scalar_ = DType::Bool;
  bool has_dim_ = false, has_zero_ = false, has_scalar_ = false;
};

// A scalar stored into (or computed with in) dtype `d` must fit it, as c10's checked_convert
// requires: an integer dtype takes no NaN, infinity or value outside its range, Float32 no
// finite value beyond its range. Otherwise a kiln::Error names the op, `what` and the value.
void check_scalar_fits(const char* op, const char* what, const Scalar& v, DType d);

// All inputs on one device; returns it.
Device common_device(const char* op, std::span<const Tensor> ts);

// The float dtype an op computes in for input dtype t (ints and bool go to Float32).
inline DType to_floating(DType t) { return is_floating(t) ? t : DType::Float32; }

}  // namespace kiln
