#include "jit/cpu/sample_kernels.h"

#include <cmath>

namespace kiln::jit::sample_kernels {

namespace {

constexpr DType f32 = DType::Float32;

}  // namespace

LoopKernel gelu(double c0) {
  LoopKernel k = LoopKernel::uniform(f32, 1);
  const int32_t x = k.load(0);
  auto c = [&](double v) { return k.constant(v, f32); };
  auto mul = [&](int32_t a, int32_t b) { return k.binary(ExprOp::Mul, a, b); };
  auto add = [&](int32_t a, int32_t b) { return k.binary(ExprOp::Add, a, b); };
  const int32_t cube = mul(mul(mul(c(c0), x), x), x);
  const int32_t t = k.unary(ExprOp::Tanh, mul(add(x, cube), c(0.79788456)));
  k.stores = {mul(mul(c(0.5), x), add(c(1.0), t))};
  return k;
}

LoopKernel axpb(double c0) {
  LoopKernel k = LoopKernel::uniform(f32, 2);
  const int32_t x = k.load(0), y = k.load(1);
  k.stores = {k.binary(ExprOp::Add, k.binary(ExprOp::Mul, x, k.constant(c0, f32)), y)};
  return k;
}

LoopKernel softmax_row(double c0) {
  LoopKernel k = LoopKernel::uniform(f32, 1);
  const int32_t x = k.binary(ExprOp::Mul, k.load(0), k.constant(c0, f32));
  const int32_t e = k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, x, k.reduce(ExprOp::ReduceMax, x)));
  const int32_t r = k.binary(ExprOp::Div, k.constant(1.0, f32), k.reduce(ExprOp::ReduceSum, e));
  k.stores = {k.binary(ExprOp::Mul, e, r)};
  return k;
}

LoopKernel layernorm_row(double c0) {
  LoopKernel k = LoopKernel::uniform(f32, 1);
  const int32_t x = k.load(0);
  const int32_t m = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), k.row_size(f32));
  const int32_t d = k.binary(ExprOp::Sub, x, m);
  const int32_t v = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, d, d)),
                             k.row_size(f32));
  k.stores = {k.binary(ExprOp::Mul, d,
                       k.unary(ExprOp::Rsqrt, k.binary(ExprOp::Add, v, k.constant(c0, f32))))};
  return k;
}

LoopKernel pow(double c0) {
  LoopKernel k = LoopKernel::uniform(f32, 2);
  k.stores = {
      k.binary(ExprOp::Add, k.binary(ExprOp::Pow, k.load(0), k.load(1)), k.constant(c0, f32))};
  return k;
}

LoopKernel sin_cos(double c0) {
  LoopKernel k = LoopKernel::uniform(f32, 1);
  const int32_t x = k.load(0);
  k.stores = {k.binary(ExprOp::Add,
                       k.unary(ExprOp::Sin, k.binary(ExprOp::Mul, x, k.constant(c0, f32))),
                       k.unary(ExprOp::Cos, x))};
  return k;
}

LoopKernel int_pow(double c0) {
  LoopKernel k = LoopKernel::uniform(DType::Int32, 2);
  k.stores = {k.binary(ExprOp::Add, k.binary(ExprOp::Pow, k.load(0), k.load(1)),
                       k.constant(std::round(c0 * 1e6), DType::Int32))};
  return k;
}

LoopKernel column_sum(double c0) {
  LoopKernel k = LoopKernel::uniform(f32, 1);
  k.stores = {k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, k.load(0), k.constant(c0, f32)))};
  return k;
}

LoopKernel rand(double c0) {
  LoopKernel k = LoopKernel::uniform(f32, 1, 4);
  k.params = {DType::Int32, DType::Int32, DType::Int32, DType::Int32};
  k.stores = {k.binary(ExprOp::Add, k.rand_uniform(0, f32),
                       k.binary(ExprOp::Mul, k.load(0), k.constant(c0, f32)))};
  return k;
}

}  // namespace kiln::jit::sample_kernels
