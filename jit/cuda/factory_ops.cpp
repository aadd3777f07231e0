#include "jit/cuda/factory_ops.h"

#include <fmt/format.h>

#include <bit>
#include <type_traits>

#include "runtime/dispatcher.h"
#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

// Words: [0] n, [1] out, [2] start, [3] step (Int64 bits with int_math, else Float64 bits),
// [4] int_math. Values: start + i * step in int64 (wrapping) or in double, then converted.
CudaSource arange_source(DType t) {
  const std::string name = fmt::format("kiln_arange_{}", dtype_name(t));
  const char* T = cuda_storage_type(t);
  std::string s = source_kernel_begin(name, 5);
  s += fmt::format("  {0}* const out = ({0}*)a.w[1];\n", T);
  s += grid_stride_loop();
  s += fmt::format(
      "    if (a.w[4] != 0)\n"
      "      out[i] = ({0})(kiln_i64)(a.w[2] + (kiln_u64)i * a.w[3]);\n"
      "    else\n"
      "      out[i] = ({0})(__longlong_as_double((kiln_i64)a.w[2]) +\n"
      "                     (double)i * __longlong_as_double((kiln_i64)a.w[3]));\n  }}\n}}\n",
      t == DType::Int32 ? "int" : T);
  return {name, s};
}

void arange_cuda(const OpCall& c, const Tensor& out) {
  const Scalar& start = c.attrs.scalars[0];
  const Scalar& step = c.attrs.scalars[1];
  const bool int_math = is_integral(c.attrs.dtype) && !start.is_floating() && !step.is_floating();
  const uint64_t w[] = {
      static_cast<uint64_t>(out.impl()->numel()), address_word(out),
      int_math ? static_cast<uint64_t>(start.to_int()) : std::bit_cast<uint64_t>(start.to_double()),
      int_math ? static_cast<uint64_t>(step.to_int()) : std::bit_cast<uint64_t>(step.to_double()),
      int_math ? 1u : 0u};
  launch_source_kernel(out.impl()->device().index, rendered<arange_source>(c.attrs.dtype), w);
}

// Words: [0] steps, [1] out, [2] start (T), [3] end (T), [4] step (S: T for floats, else
// double), [5] half. torch's two halves, as ops/ranges.cpp.
CudaSource linspace_source(DType t) {
  const std::string name = fmt::format("kiln_linspace_{}", dtype_name(t));
  const char* T = cuda_storage_type(t);
  const DType st = is_floating(t) ? t : DType::Float64;
  const char* S = cuda_storage_type(st);
  std::string s = source_kernel_begin(name, 6);
  s += fmt::format(
      "  {0}* const out = ({0}*)a.w[1];\n"
      "  const {0} start = {2}, end = {3};\n  const {1} stp = {4};\n"
      "  const kiln_i64 n = (kiln_i64)a.w[0], half = (kiln_i64)a.w[5];\n",
      T, S, cuda_word_value(t, "a.w[2]"), cuda_word_value(t, "a.w[3]"),
      cuda_word_value(st, "a.w[4]"));
  s += grid_stride_loop();
  s += fmt::format(
      "    if (n == 1)\n      out[i] = start;\n"
      "    else\n"
      "      out[i] = i < half ? ({0})(start + stp * ({1})i) : ({0})(end - stp * ({1})(n - 1 - "
      "i));\n"
      "  }}\n}}\n",
      T, S);
  return {name, s};
}

void linspace_cuda(const OpCall& c, const Tensor& out) {
  const DType t = c.attrs.dtype;
  const int64_t steps = out.impl()->numel();
  uint64_t step_word = 0;
  visit_dtype(t, [&]<class T>(TypeTag<T>) {
    if constexpr (!std::is_same_v<T, bool>) {
      using S = std::conditional_t<std::is_floating_point_v<T>, T, double>;
      const T start = c.attrs.scalars[0].to<T>(), end = c.attrs.scalars[1].to<T>();
      const S step = steps > 1
                         ? (static_cast<S>(end) - static_cast<S>(start)) / static_cast<S>(steps - 1)
                         : S(0);
      step_word =
          cuda_word_of(Scalar(static_cast<double>(step)), is_floating(t) ? t : DType::Float64);
    }
  });
  const uint64_t w[] = {
      static_cast<uint64_t>(steps),        address_word(out), cuda_word_of(c.attrs.scalars[0], t),
      cuda_word_of(c.attrs.scalars[1], t), step_word,         static_cast<uint64_t>(steps / 2)};
  launch_source_kernel(out.impl()->device().index, rendered<linspace_source>(t), w);
}

// Words: [0] rows * cols, [1] cols, [2] out.
CudaSource eye_source(DType t) {
  const std::string name = fmt::format("kiln_eye_{}", dtype_name(t));
  const char* T = cuda_storage_type(t);
  std::string s = source_kernel_begin(name, 3);
  s += fmt::format("  {0}* const out = ({0}*)a.w[2];\n", T);
  s += grid_stride_loop();
  s += fmt::format(
      "    kiln_i64 r = 0;\n    const kiln_i64 c = kiln_divmod(i, (kiln_i64)a.w[1], &r);\n"
      "    out[i] = r == c ? ({0})1 : ({0})0;\n  }}\n}}\n",
      T);
  return {name, s};
}

void eye_cuda(const OpCall& c, const Tensor& out) {
  const uint64_t w[] = {static_cast<uint64_t>(out.impl()->numel()),
                        static_cast<uint64_t>(c.attrs.dims[1]), address_word(out)};
  launch_source_kernel(out.impl()->device().index, rendered<eye_source>(c.attrs.dtype), w);
}

}  // namespace

std::vector<CudaSource> cuda_factory_sources() {
  std::vector<CudaSource> all;
  for (DType t : {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64}) {
    all.push_back(eye_source(t));
    if (t == DType::Bool) continue;  // arange and linspace refuse Bool
    all.push_back(arange_source(t));
    all.push_back(linspace_source(t));
  }
  return all;
}

void register_cuda_factory_kernels() {
  register_device_kernel(OpId::Arange, Device::Type::CUDA, arange_cuda);
  register_device_kernel(OpId::Linspace, Device::Type::CUDA, linspace_cuda);
  register_device_kernel(OpId::Eye, Device::Type::CUDA, eye_cuda);
}

}  // namespace kiln::jit::cuda
