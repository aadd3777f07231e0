// Losses. cross_entropy is a primitive (OpId::CrossEntropy); mse_loss is a composite.
// CrossEntropy inputs: logits [N, C] (or [C], unbatched), target Int64 [N] (or 0-dim).
// Attrs: ints[0] = ignore_index (cross_entropy() passes PyTorch's default, -100).
//
// loss = mean over the rows whose target != ignore_index of (logsumexp(row) - row[target]), i.e.
// the mean of -log_softmax picked at the target. Output: a 0-dim tensor of the logits' dtype
// (Float32/Float64). When every row is ignored (or N == 0) the mean is 0/0 = NaN, as in PyTorch.
// A target outside [0, C) that is not ignore_index raises a kiln::Error naming it; targets are
// checked before any arithmetic. Each row's logsumexp in the logits' dtype, its loss and the mean
// in double, in the eager reductions' order (ops/reduce.h cross_entropy_total): bit for bit the
// chain of eager ops that the JIT rewrites the op into (jit/passes/cross_entropy_split.h).
//
// Two ops of the JIT's rewrite only (no public function), whose first input stands for the
// logits' shape (the logits, or a value of their shape they are computed from: the rewrite
// picks one that is in memory anyway; its data is never read):
// - CrossEntropyCount: inputs like and target, CrossEntropy's attrs; cross_entropy's checks of
//   the targets (the same errors), then the rows counted (target != ignore_index) as a 0-dim
//   Float64.
// - IndicesOf: input like; 0, 1, ..., C - 1 (Int64 [C], C its last dim; Int32 when attrs.dtype
//   is Int32, for C < 2^31): the class indices that the rewrite compares with the targets to pick
//   each row's target logit in a row kernel (in ops/losses.h class_index_dtype).
// - CrossEntropyTargetLogit: inputs the logits themselves and target, CrossEntropy's attrs; the
//   targets' checks, then each row's logit at its target as Float64 ([N, 1], [1] unbatched; 0
//   for an ignored row): the rewrite's pick where the logits are in memory anyway.
#include <cmath>
#include <limits>
#include <vector>

#include "ops/eager_helpers.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/nn_registry.h"
#include "ops/reduce.h"

namespace kiln {

namespace {

constexpr int64_t kIgnoreIndex = -100;

// The checks both ops make of their inputs.
void check_cross_entropy_inputs(const OpCall& c) {
  const Tensor& lt = c.inputs[0];
  const Tensor& tt = c.inputs[1];
  const TensorImpl* l = lt.impl();
  const TensorImpl* t = tt.impl();
  KILN_CHECK(is_floating(l->dtype()), "cross_entropy: expected Float32 or Float64 logits, got {}",
             describe(lt));
  KILN_CHECK(t->dtype() == DType::Int64,
             "cross_entropy: expected an Int64 target of class indices, got {}", describe(tt));
  KILN_CHECK(l->dim() == 1 || l->dim() == 2,
             "cross_entropy: expected logits of shape [N, C] or [C], got {}", describe(lt));
  if (l->dim() == 2) {
    KILN_CHECK(t->dim() == 1 && t->sizes()[0] == l->sizes()[0],
               "cross_entropy: logits {} need a target of shape [{}], got {}", describe(lt),
               l->sizes()[0], describe(tt));
  } else {
    KILN_CHECK(t->dim() == 0, "cross_entropy: unbatched logits {} need a 0-dim target, got {}",
               describe(lt), describe(tt));
  }
}

void cross_entropy_meta(const OpCall& c, OutputMeta& m) {
  check_cross_entropy_inputs(c);
  m.sizes = {};
  m.dtype = c.inputs[0].impl()->dtype();
  m.device = common_device("cross_entropy", c.inputs);
}

// CrossEntropyCount's meta: its `like` input is checked for its shape only (any dtype).
void count_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& lt = c.inputs[0];
  const Tensor& tt = c.inputs[1];
  const TensorImpl* l = lt.impl();
  const TensorImpl* t = tt.impl();
  KILN_CHECK(t->dtype() == DType::Int64,
             "cross_entropy: expected an Int64 target of class indices, got {}", describe(tt));
  KILN_CHECK(l->dim() == 1 || l->dim() == 2,
             "cross_entropy: expected logits of shape [N, C] or [C], got {}", describe(lt));
  KILN_CHECK(l->dim() == 2 ? t->dim() == 1 && t->sizes()[0] == l->sizes()[0] : t->dim() == 0,
             "cross_entropy: logits {} do not match the target {}", describe(lt), describe(tt));
  m.sizes = {};
  m.dtype = DType::Float64;
  m.device = common_device("cross_entropy", c.inputs);
}

void target_logit_meta(const OpCall& c, OutputMeta& m) {
  check_cross_entropy_inputs(c);
  const TensorImpl* l = c.inputs[0].impl();
  m.sizes = l->dim() == 2 ? DimVector{l->sizes()[0], 1} : DimVector{1};
  m.dtype = DType::Float64;
  m.device = common_device("cross_entropy", c.inputs);
}

void indices_of_meta(const OpCall& c, OutputMeta& m) {
  const TensorImpl* l = c.inputs[0].impl();
  KILN_CHECK(l->dim() >= 1, "indices_of: expected a tensor of at least one dim, got {}",
             describe(c.inputs[0]));
  m.sizes = {l->sizes()[l->dim() - 1]};
  m.dtype = c.attrs.dtype == DType::Int32 ? DType::Int32 : DType::Int64;
  KILN_CHECK(m.dtype == DType::Int64 || m.sizes[0] <= std::numeric_limits<int32_t>::max(),
             "indices_of: {} indices do not fit Int32", m.sizes[0]);
  m.device = l->device();
}

// The targets' checks; returns the number of rows not ignored.
int64_t counted_targets(const int64_t* tp, int64_t N, int64_t C, int64_t ignore) {
  int64_t counted = 0;
  for (int64_t n = 0; n < N; ++n) {
    if (tp[n] == ignore) continue;
    KILN_CHECK(tp[n] >= 0 && tp[n] < C,
               "cross_entropy: target {} at position {} is out of range for {} classes", tp[n], n,
               C);
    ++counted;
  }
  return counted;
}

struct RowsAndTargets {
  Tensor target;  // contiguous
  int64_t N = 0, C = 0, ignore = 0, counted = 0;
};

// The targets (checked) of logits, or of a value of their shape, `like`.
RowsAndTargets rows_and_targets(const OpCall& c) {
  RowsAndTargets r;
  r.target = eager_contiguous(c.inputs[1]);
  const TensorImpl* l = c.inputs[0].impl();
  r.N = l->dim() == 2 ? l->sizes()[0] : 1;
  r.C = l->sizes()[l->dim() - 1];
  r.ignore = c.attrs.ints[0];
  r.counted =
      counted_targets(static_cast<const int64_t*>(r.target.impl()->data()), r.N, r.C, r.ignore);
  return r;
}

void cross_entropy_eager(const OpCall& c, const Tensor& out) {
  const RowsAndTargets r = rows_and_targets(c);
  const Tensor logits = eager_contiguous(c.inputs[0]);
  const int64_t* tp = static_cast<const int64_t*>(r.target.impl()->data());
  visit_dtype(logits.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const double total =
          cross_entropy_total(static_cast<const T*>(logits.impl()->data()), tp, r.N, r.C, r.ignore);
      *static_cast<T*>(out.impl()->data()) = static_cast<T>(total / static_cast<double>(r.counted));
    } else {
      fail("cross_entropy: internal error: non-float dtype {}", logits.dtype());
    }
  });
}

void count_eager(const OpCall& c, const Tensor& out) {
  *static_cast<double*>(out.impl()->data()) = static_cast<double>(rows_and_targets(c).counted);
}

void target_logit_eager(const OpCall& c, const Tensor& out) {
  const RowsAndTargets r = rows_and_targets(c);  // checked
  const Tensor logits = eager_contiguous(c.inputs[0]);
  const int64_t* tp = static_cast<const int64_t*>(r.target.impl()->data());
  double* op = static_cast<double*>(out.impl()->data());
  visit_dtype(logits.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* lp = static_cast<const T*>(logits.impl()->data());
      for (int64_t n = 0; n < r.N; ++n)
        op[n] = tp[n] == r.ignore ? 0.0 : static_cast<double>(lp[n * r.C + tp[n]]);
    } else {
      fail("cross_entropy: internal error: non-float dtype {}", logits.dtype());
    }
  });
}

void indices_of_eager(const OpCall&, const Tensor& out) {
  const int64_t n = out.impl()->numel();
  if (out.dtype() == DType::Int32) {
    int32_t* p = static_cast<int32_t*>(out.impl()->data());
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(i);
    return;
  }
  int64_t* p = static_cast<int64_t*>(out.impl()->data());
  for (int64_t i = 0; i < n; ++i) p[i] = i;
}

}  // namespace

void register_loss_ops() {
  register_op(OpId::CrossEntropy,
              {"cross_entropy", cross_entropy_meta, cross_entropy_eager, kChecksData});
  register_op(OpId::CrossEntropyCount,
              {"cross_entropy_count", count_meta, count_eager, kChecksData});
  register_op(OpId::CrossEntropyTargetLogit,
              {"cross_entropy_target_logit", target_logit_meta, target_logit_eager, kChecksData});
  register_op(OpId::IndicesOf, {"indices_of", indices_of_meta, indices_of_eager, kNoFlags});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
  Attrs a;
  a.ints[0] = kIgnoreIndex;
  const Tensor in[] = {logits, target};
  return dispatch(OpId::CrossEntropy, in, a);
}

// mean((a - b)^2) over the broadcast shape, as torch.nn.functional.mse_loss (mean reduction):
// `square(a - b).mean()`, the mean's summation order (ops/reduce.h). n == 0 gives 0/0 = NaN, as
// in PyTorch. (Until late 2026-11-30 it was the dot product d.d / n, a BLAS call: its gradient
// was two more matrix products and six views, which split a recorded training step's fused
// loss head; the JIT now fuses forward and backward into a row kernel and one pointwise kernel.)
Tensor mse_loss(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.defined() && b.defined(), "mse_loss: an argument is an undefined tensor");
  KILN_CHECK(is_floating(a.dtype()) && a.dtype() == b.dtype(),
             "mse_loss: expected two tensors of one float dtype, got {} and {}", describe(a),
             describe(b));
  return mean(square(sub(a, b)));
}

}  // namespace kiln
