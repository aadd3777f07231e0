#include "jit/cuda/random_ops.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <vector>

#include "jit/cuda/loop_launch.h"
#include "jit/cuda/philox_cuda.h"
#include "jit/cuda/source_kernel.h"
#include "jit/lower/lowering.h"
#include "ops/random.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "tracer/graph.h"

namespace kiln::jit::cuda {

namespace {

// The four Int32 params of a RandUniform leaf: seed low/high, counter low/high (32-bit words in
// Int64 Scalars, as the CPU JIT passes them).
std::array<Scalar, 4> philox_params(const Attrs& a) {
  const uint64_t seed = philox_seed(a), counter = philox_counter(a);
  return {Scalar(static_cast<int64_t>(seed & 0xffffffffu)),
          Scalar(static_cast<int64_t>(seed >> 32)),
          Scalar(static_cast<int64_t>(counter & 0xffffffffu)),
          Scalar(static_cast<int64_t>(counter >> 32))};
}

// rand: one RandUniform leaf stored to the output.
LoopKernel rand_kernel(DType t) {
  LoopKernel k;
  k.params.assign(4, DType::Int32);
  k.stores = {k.rand_uniform(0, t)};
  k.verify();
  return k;
}

// dropout through the CPU JIT's lowering: param 0 is p (Float64), params 1..4 the Philox words.
LoopKernel dropout_kernel(DType t) {
  LoopKernel k;
  k.inputs = {t};
  k.params = {DType::Float64, DType::Int32, DType::Int32, DType::Int32, DType::Int32};
  tracer::Node n;
  n.op = OpId::Dropout;
  n.inputs = {0};
  n.meta.dtype = t;
  tracer::ValueMeta in_meta;
  in_meta.dtype = t;
  const tracer::ValueMeta* metas[] = {&in_meta};
  ScalarSource s;
  s.param[0] = 0;
  s.philox = 1;
  const int32_t x = k.load(0);
  k.stores = {lower_node(k, n, metas, std::span<const int32_t>(&x, 1), s)};
  k.verify();
  return k;
}

void rand_cuda(const OpCall& c, const Tensor& out) {
  const std::array<Scalar, 4> p = philox_params(c.attrs);
  launch_loop_kernel(rand_kernel(out.impl()->dtype()), out, {}, p);
}

void dropout_cuda(const OpCall& c, const Tensor& out) {
  const std::array<Scalar, 4> w = philox_params(c.attrs);
  const Scalar params[] = {Scalar(c.attrs.scalars[0].to_double()), w[0], w[1], w[2], w[3]};
  launch_loop_kernel(dropout_kernel(out.impl()->dtype()), out, c.inputs, params);
}

// Element i of the contiguous output from Philox::draw(seed, counter + i).
// Words: [0] n, [1] output address, [2] seed, [3] first counter, [4] low, [5] range.
std::string random_source(const std::string& name, DType t, const std::string& value) {
  std::string s = source_kernel_prelude();
  s += philox_cuda_source();
  s += source_kernel_head(name, 6);
  s += fmt::format(
      "  const kiln_i64 n = (kiln_i64)a.w[0];\n"
      "  {0}* const out = ({0}*)a.w[1];\n"
      "  const kiln_i64 step = (kiln_i64)gridDim.x * blockDim.x;\n"
      "  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{\n"
      "    unsigned r[4];\n"
      "    kiln_philox(a.w[2], a.w[3] + (kiln_u64)i, r);\n"
      "    out[i] = {1};\n"
      "  }}\n}}\n",
      cuda_storage_type(t), value);
  return s;
}

void run_random_source(const CudaSource& k, const OpCall& c, const Tensor& out, uint64_t low = 0,
                       uint64_t range = 0) {
  const TensorImpl* o = out.impl();
  const uint64_t w[] = {static_cast<uint64_t>(o->numel()),
                        reinterpret_cast<uint64_t>(o->data()),
                        philox_seed(c.attrs),
                        philox_counter(c.attrs),
                        low,
                        range};
  launch_source_kernel(o->device().index, k, w);
}

void randn_cuda(const OpCall& c, const Tensor& out) {
  run_random_source(rendered<randn_source>(out.impl()->dtype()), c, out);
}

void randint_cuda(const OpCall& c, const Tensor& out) {
  const int64_t low = c.attrs.scalars[0].to_int();
  const uint64_t range =
      static_cast<uint64_t>(c.attrs.scalars[1].to_int()) - static_cast<uint64_t>(low);
  run_random_source(rendered<randint_source>(out.impl()->dtype()), c, out,
                    static_cast<uint64_t>(low), range);
}

}  // namespace

CudaSource randn_source(DType t) {
  KILN_CHECK(is_floating(t), "randn: expected Float32 or Float64, got {}", t);
  const std::string name = fmt::format("kiln_randn_{}", dtype_name(t));
  const std::string v = t == DType::Float32 ? "(float)kiln_normal_f32(r)" : "kiln_normal_f64(r)";
  return {name, random_source(name, t, v)};
}

CudaSource randint_source(DType t) {
  const std::string name = fmt::format("kiln_randint_{}", dtype_name(t));
  // low + (r0:r1 mod range) in uint64 (wrapping), then converted as static_cast does.
  const std::string x = "(kiln_i64)(a.w[4] + ((kiln_u64)r[0] << 32 | r[1]) % a.w[5])";
  std::string v;
  switch (t) {
    case DType::Bool:
      v = fmt::format("{} != 0 ? 1 : 0", x);
      break;
    case DType::Int32:
      v = fmt::format("(int)(unsigned)(kiln_u64){}", x);
      break;
    default:
      v = fmt::format("({}){}", cuda_storage_type(t), x);
  }
  return {name, random_source(name, t, v)};
}

LoopKernel cuda_rand_loop_kernel(DType t) { return rand_kernel(t); }
LoopKernel cuda_dropout_loop_kernel(DType t) { return dropout_kernel(t); }

void register_cuda_random_kernels() {
  register_device_kernel(OpId::Rand, Device::Type::CUDA, rand_cuda);
  register_device_kernel(OpId::Dropout, Device::Type::CUDA, dropout_cuda);
  register_device_kernel(OpId::Randn, Device::Type::CUDA, randn_cuda);
  register_device_kernel(OpId::Randint, Device::Type::CUDA, randint_cuda);
}

}  // namespace kiln::jit::cuda
