// libtorch versions of kiln-perf's memory-bound workloads (copy, gelu, layernorm, softmax) and of
// dispatch: the same sizes, inputs and op sequences as perf/workloads/*.cpp, in eager ATen, so
// that the figures compare op for op. Checks use the same references and tolerances.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "perf/peers/libtorch_cases.h"

namespace kiln::perf::peer {

namespace {

std::string at_str(int64_t r, int64_t c, float got, double want) {
  return fmt::format("({}, {}) is {}, expected {}", r, c, got, want);
}

class CopyCase : public PeerCase {
 public:
  explicit CopyCase(int64_t n) : x_(torch_ramp(n, -1.0f, 1.0f)), y_(at::zeros({n})) {}
  void run() override { y_.copy_(x_); }
  void check() const override {
    if (!at::equal(x_, y_)) check_failed("libtorch copy: the output differs from the input");
  }

 private:
  at::Tensor x_, y_;
};

class GeluCase : public PeerCase {
 public:
  explicit GeluCase(int64_t n) : x_(torch_ramp(n, -6.0f, 6.0f)) {}
  void run() override {
    // The op sequence of perf/workloads/gelu.cpp, op for op.
    at::Tensor inner = (x_ + 0.044715 * x_ * x_ * x_) * 0.79788456;
    y_ = 0.5 * x_ * (1.0 + at::tanh(inner));
  }
  void check() const override {
    const float* x = x_.data_ptr<float>();
    const float* y = y_.data_ptr<float>();
    for (int64_t i = 0; i < x_.numel(); i += 997) {
      double v = x[i];
      double ref = 0.5 * v * (1.0 + std::tanh(0.79788456 * (v + 0.044715 * v * v * v)));
      if (std::abs(y[i] - ref) > 1e-5 + 1e-5 * std::abs(ref))
        check_failed("libtorch gelu: element " + at_str(0, i, y[i], ref));
    }
  }

 private:
  at::Tensor x_, y_;
};

class LayerNormCase : public PeerCase {
 public:
  LayerNormCase(int64_t rows, int64_t cols)
      : x_(torch_ramp(rows * cols, -3.0f, 3.0f).view({rows, cols})),
        w_(torch_ramp(cols, 0.5f, 1.5f)),
        b_(torch_ramp(cols, -0.5f, 0.5f)) {}
  void run() override {
    at::Tensor mu = x_.mean({-1}, true);
    at::Tensor var = x_.var({-1}, /*unbiased=*/false, /*keepdim=*/true);
    y_ = (x_ - mu) / at::sqrt(var + 1e-5) * w_ + b_;
  }
  void check() const override {
    const int64_t rows = x_.size(0), cols = x_.size(1);
    const float *x = x_.data_ptr<float>(), *y = y_.data_ptr<float>();
    const float *w = w_.data_ptr<float>(), *b = b_.data_ptr<float>();
    for (int64_t r : {int64_t{0}, int64_t{1}, rows - 1}) {
      double s = 0, ss = 0;
      for (int64_t c = 0; c < cols; ++c) s += x[r * cols + c];
      double mu = s / cols;
      for (int64_t c = 0; c < cols; ++c) ss += (x[r * cols + c] - mu) * (x[r * cols + c] - mu);
      double inv = 1.0 / std::sqrt(ss / cols + 1e-5);
      for (int64_t c = 0; c < cols; ++c) {
        double ref = (x[r * cols + c] - mu) * inv * w[c] + b[c];
        if (std::abs(y[r * cols + c] - ref) > 1e-4 + 1e-4 * std::abs(ref))
          check_failed("libtorch layernorm: element " + at_str(r, c, y[r * cols + c], ref));
      }
    }
  }

 private:
  at::Tensor x_, w_, b_, y_;
};

class SoftmaxCase : public PeerCase {
 public:
  SoftmaxCase(int64_t rows, int64_t cols)
      : x_(torch_ramp(rows * cols, -8.0f, 8.0f).view({rows, cols})) {}
  void run() override {
    at::Tensor e = at::exp(x_ - x_.amax({-1}, true));
    y_ = e / e.sum({-1}, true);
  }
  void check() const override {
    const int64_t rows = x_.size(0), cols = x_.size(1);
    const float *x = x_.data_ptr<float>(), *y = y_.data_ptr<float>();
    for (int64_t r : {int64_t{0}, int64_t{1}, rows - 1}) {
      double m = x[r * cols], s = 0;
      for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(x[r * cols + c]));
      for (int64_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
      for (int64_t c = 0; c < cols; ++c) {
        double ref = std::exp(x[r * cols + c] - m) / s;
        if (std::abs(y[r * cols + c] - ref) > 1e-9 + 1e-5 * ref)
          check_failed("libtorch softmax: element " + at_str(r, c, y[r * cols + c], ref));
      }
    }
  }

 private:
  at::Tensor x_, y_;
};

constexpr int kChain = 1000;
constexpr int64_t kElems = 16;

class DispatchCase : public PeerCase {
 public:
  DispatchCase() : x_(torch_ramp(kElems, 0.0f, 1.0f)), step_(at::ones({kElems})) {}
  void run() override {
    at::Tensor y = x_;
    for (int i = 0; i < kChain; ++i) y = y + step_;
    y_ = y;
  }
  void check() const override {
    const float *x = x_.data_ptr<float>(), *y = y_.data_ptr<float>();
    for (int64_t i = 0; i < kElems; ++i) {
      float ref = x[i];
      for (int k = 0; k < kChain; ++k) ref += 1.0f;
      if (y[i] != ref) check_failed("libtorch dispatch: element " + at_str(0, i, y[i], ref));
    }
  }

 private:
  at::Tensor x_, step_, y_;
};

// "8192x1024 float32", as kiln's fmt::format("{}x{} float32", rows, cols).
std::string rows_shape(int64_t rows, int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols) + " float32";
}

}  // namespace

PeerPrepared torch_copy(bool small) {
  int64_t n = small ? (int64_t{1} << 24) : (int64_t{1} << 26);
  return {std::make_unique<CopyCase>(n), small ? "2^24 float32" : "2^26 float32", 8.0 * n, 0};
}

PeerPrepared torch_gelu(bool small) {
  int64_t n = small ? (int64_t{1} << 22) : (int64_t{1} << 24);
  return {std::make_unique<GeluCase>(n), small ? "2^22 float32" : "2^24 float32", 8.0 * n, 0};
}

PeerPrepared torch_layernorm(bool small) {
  int64_t rows = small ? 2048 : 8192, cols = 1024;
  return {std::make_unique<LayerNormCase>(rows, cols), rows_shape(rows, cols),
          8.0 * static_cast<double>(rows * cols), 0};
}

PeerPrepared torch_softmax(bool small) {
  int64_t rows = small ? 2048 : 8192, cols = 1024;
  return {std::make_unique<SoftmaxCase>(rows, cols), rows_shape(rows, cols),
          8.0 * static_cast<double>(rows * cols), 0};
}

PeerPrepared torch_dispatch(bool) {
  return {std::make_unique<DispatchCase>(), "1000 x add, 16 float32", 0, kChain};
}

}  // namespace kiln::perf::peer
