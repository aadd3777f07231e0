// xent: a classifier's loss head, forward and backward: `cross_entropy(x * 0.5 + b, t)` over
// 8192x1024 float32 logits (2048x1024 small), then the logits' gradient by autograd. Eager
// runs the affine ops, cross_entropy's kernel, and the backward's softmax, one-hot comparison
// and scaling as separate ops; the JIT fuses the forward's affine producer and each row's
// logsumexp into one row kernel around the targets' step, and the backward into softmax's row
// kernel plus one pointwise kernel (docs/jit.md "cross_entropy"). GB/s counts one read of the
// logits and one write of their gradient.
#include <cmath>
#include <vector>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

class XentCase : public Case {
 public:
  XentCase(int64_t rows, int64_t cols)
      : x_(ramp_input(rows * cols, -6.0f, 6.0f).view({rows, cols})),
        b_(ramp_input(cols, -1.0f, 1.0f)),
        t_(targets(rows, cols)) {}
  void run() override {
    const Tensor xg = x_.detach().requires_grad_();
    loss_ = cross_entropy(xg * 0.5 + b_, t_);
    loss_.backward();
    grad_ = xg.grad();
  }
  void check() const override {
    // Against double precision: the mean loss to 1e-6 relative (kiln sums in double), and
    // rows 0, 1 and the last of the gradient, (softmax - onehot) * 0.5 / rows, to 1e-5.
    const int64_t rows = x_.size(0), cols = x_.size(1);
    const float *x = x_.data_ptr<float>(), *b = b_.data_ptr<float>();
    const int64_t* t = t_.data_ptr<int64_t>();
    const Tensor gh = on_host(grad_);
    const float* g = gh.data_ptr<float>();
    std::vector<double> z(static_cast<size_t>(cols));
    double total = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double m = -INFINITY, s = 0;
      for (int64_t c = 0; c < cols; ++c) {
        z[c] = static_cast<double>(x[r * cols + c] * 0.5f + b[c]);
        m = std::max(m, z[c]);
      }
      for (int64_t c = 0; c < cols; ++c) s += std::exp(z[c] - m);
      total += m + std::log(s) - z[t[r]];
      if (r > 1 && r != rows - 1) continue;
      for (int64_t c = 0; c < cols; ++c) {
        const double want =
            (std::exp(z[c] - m) / s - (c == t[r] ? 1.0 : 0.0)) * 0.5 / static_cast<double>(rows);
        KILN_CHECK(std::abs(g[r * cols + c] - want) <= 1e-12 + 1e-5 * std::abs(want),
                   "xent: gradient ({}, {}) is {}, expected {}", r, c, g[r * cols + c], want);
      }
    }
    const double want = total / static_cast<double>(rows);
    const float got = on_host(loss_).item<float>();
    KILN_CHECK(std::abs(got - want) <= 1e-6 * std::abs(want), "xent: loss {}, expected {}", got,
               want);
  }

 private:
  // Row r's class: a fixed stride through the classes.
  static Tensor targets(int64_t rows, int64_t cols) {
    std::vector<int64_t> v(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) v[r] = (r * 37 + 11) % cols;
    return from_vector<int64_t>(v, {rows});
  }
  Tensor x_, b_, t_, loss_, grad_;
};

}  // namespace

Workload xent_workload() {
  Workload w{"xent",
             "cross_entropy(x * 0.5 + b, t) forward and backward over 8192x1024 float32 logits", "",
             nullptr, true};
  w.prepare = [](Size size, Device) {
    const int64_t rows = size == Size::Small ? 2048 : 8192, cols = 1024;
    Prepared p;
    p.c = std::make_unique<XentCase>(rows, cols);
    p.shape = fmt::format("{}x{} float32", rows, cols);
    p.bytes = 2.0 * 4.0 * static_cast<double>(rows * cols);
    return p;
  };
  return w;
}

}  // namespace kiln::perf
