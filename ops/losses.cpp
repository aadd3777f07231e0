// Losses. cross_entropy is a primitive (OpId::CrossEntropy); mse_loss is a composite.
// CrossEntropy inputs: logits [N, C] (or [C], unbatched), target Int64 [N] (or 0-dim).
// Attrs: ints[0] = ignore_index (cross_entropy() passes PyTorch's default, -100).
//
// loss = mean over the rows whose target != ignore_index of (logsumexp(row) - row[target]), i.e.
// the mean of -log_softmax picked at the target. Output: a 0-dim tensor of the logits' dtype
// (Float32/Float64). When every row is ignored (or N == 0) the mean is 0/0 = NaN, as in PyTorch.
// A target outside [0, C) that is not ignore_index raises a kiln::Error naming it; targets are
// checked before any arithmetic. Per-row losses accumulate in double.
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu/vecmath/exp_log.h"
#include "ops/cpu/vecmath/gnu_vec_ops.h"
#include "ops/eager_helpers.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/nn_registry.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

constexpr int64_t kIgnoreIndex = -100;

void cross_entropy_meta(const OpCall& c, OutputMeta& m) {
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
  m.sizes = {};
  m.dtype = l->dtype();
  m.device = common_device("cross_entropy", c.inputs);
}

void cross_entropy_eager(const OpCall& c, const Tensor& out) {
  const Tensor logits = eager_contiguous(c.inputs[0]);
  const Tensor target = eager_contiguous(c.inputs[1]);
  const TensorImpl* l = logits.impl();
  const int64_t N = l->dim() == 2 ? l->sizes()[0] : 1;
  const int64_t C = l->sizes()[l->dim() - 1];
  const int64_t ignore = c.attrs.ints[0];
  const int64_t* tp = static_cast<const int64_t*>(target.impl()->data());
  int64_t counted = 0;
  for (int64_t n = 0; n < N; ++n) {
    if (tp[n] == ignore) continue;
    KILN_CHECK(tp[n] >= 0 && tp[n] < C,
               "cross_entropy: target {} at position {} is out of range for {} classes", tp[n], n,
               C);
    ++counted;
  }
  std::vector<double> row_loss(N, 0.0);
  visit_dtype(l->dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_floating_point_v<T>) {
      const T* lp = static_cast<const T*>(l->data());
      const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, C));
      parallel_for(0, N, grain, [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
          if (tp[n] == ignore) continue;
          const T* row = lp + n * C;
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < C; ++j) mx = std::max(mx, static_cast<double>(row[j]));
          // exp and log through kiln's vector math (ops/cpu/vecmath/), summed in order.
          double s = 0;
          constexpr int64_t kChunk = 256;
          double e[kChunk];
          for (int64_t j0 = 0; j0 < C; j0 += kChunk) {
            const int64_t m = std::min(kChunk, C - j0);
            for (int64_t j = 0; j < m; ++j) e[j] = row[j0 + j] - mx;
            vecmath::map_contiguous<double, vecmath::kNativeVecBytes>(
                e, e, m, [](const auto& o, auto v) { return vecmath::exp(o, v); });
            for (int64_t j = 0; j < m; ++j) s += e[j];
          }
          row_loss[n] =
              mx +
              vecmath::apply_scalar(s, [](const auto& o, auto v) { return vecmath::log(o, v); }) -
              row[tp[n]];
        }
      });
      double total = 0;
      for (double v : row_loss) total += v;
      *static_cast<T*>(out.impl()->data()) = static_cast<T>(total / static_cast<double>(counted));
    } else {
      fail("cross_entropy: internal error: non-float dtype {}", l->dtype());
    }
  });
}

}  // namespace

void register_loss_ops() {
  register_op(OpId::CrossEntropy,
              {"cross_entropy", cross_entropy_meta, cross_entropy_eager, kChecksData});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
  Attrs a;
  a.ints[0] = kIgnoreIndex;
  const Tensor in[] = {logits, target};
  return dispatch(OpId::CrossEntropy, in, a);
}

// mean((a - b)^2) over the broadcast shape, as torch.nn.functional.mse_loss (mean reduction).
// Written as d.d / n with d = flatten(a - b): the sum of squares is one dot product (a BLAS call),
// and the composite needs no reduction op. n == 0 gives 0/0 = NaN, as in PyTorch.
Tensor mse_loss(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.defined() && b.defined(), "mse_loss: an argument is an undefined tensor");
  KILN_CHECK(is_floating(a.dtype()) && a.dtype() == b.dtype(),
             "mse_loss: expected two tensors of one float dtype, got {} and {}", describe(a),
             describe(b));
  Tensor d = sub(a, b);
  d = d.reshape({d.numel()});
  return div(matmul(d, d), static_cast<double>(d.numel()));
}

}  // namespace kiln
