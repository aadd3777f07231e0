// The CUDA kernels of the random, index and factory ops, run on the host against the CPU kernels
// (CI, no GPU). The very CUDA C++ text NVRTC compiles is compiled here as host C++
// (tests/tools/cuda_host_kernels_gen.cpp renders it at build time, tests/cuda/host_shim.h stands
// in for the CUDA builtins), and each op's CUDA form is called on CPU tensors with a host runner
// installed (jit/cuda/source_kernel.h): the host code that lays out the argument words and the
// kernel that reads them both run, and must give the CPU kernel's bytes. What this cannot see is
// the device itself (the launch, the stream, the error word's trip through device memory, CUDA's
// libm): tests/test_cuda_index.cpp and test_cuda_random.cpp check those on a GPU.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_device_util.h"
#include "cuda_host_kernels.h"
#include "jit/cuda/random_ops.h"
#include "jit/cuda/render.h"
#include "jit/cuda/source_kernel.h"
#include "kiln/kiln.h"
#include "ops/random.h"
#include "ops/strided.h"
#include "runtime/dispatcher.h"
#include "runtime/init.h"

namespace kiln {
namespace {

using testing::kAll;

using jit::cuda::CudaSource;

// Runs each source kernel launch through the host-compiled kernel of the same name.
class HostRunner final : public jit::cuda::SourceKernelHostRunner {
 public:
  HostRunner() { previous_ = jit::cuda::set_source_kernel_host_runner(this); }
  ~HostRunner() override { jit::cuda::set_source_kernel_host_runner(previous_); }
  void run(const CudaSource& k, std::span<const uint64_t> words) override {
    const auto it = kiln_host_kernels().find(k.name);
    ASSERT_NE(it, kiln_host_kernels().end()) << k.name << " was not generated";
    it->second(words);
    ++launches;
  }
  uint64_t* error_word() override { return error.data(); }
  std::array<uint64_t, 4> error{};
  int launches = 0;

 private:
  jit::cuda::SourceKernelHostRunner* previous_;
};

constexpr DType kIndex[] = {DType::Int32, DType::Int64};

// Op `id` on CPU tensors through the CPU kernel and through its CUDA form on the host: the same
// bytes, no kernel error.
void expect_same(OpId id, std::vector<Tensor> in, const Attrs& a, const std::string& label) {
  init();
  HostRunner runner;
  const OpCall call{id, in, a};
  OutputMeta m;
  op_def(id).meta(call, m);
  const Tensor ref = empty_tensor(m.sizes, m.dtype, Device::cpu());
  const Tensor got = empty_tensor(m.sizes, m.dtype, Device::cpu());
  const size_t bytes = static_cast<size_t>(ref.numel()) * itemsize(m.dtype);
  std::memset(got.impl()->data(), 0x5a, bytes);  // every byte must be written
  op_def(id).eager(call, ref);
  device_kernel(op_def(id), id, Device::cuda(0))(call, got);
  EXPECT_EQ(std::memcmp(ref.impl()->data(), got.impl()->data(), bytes), 0)
      << label << "\ncpu: " << ref << "\ncuda kernel on the host: " << got;
  EXPECT_EQ(runner.error[0], 0u) << label;
}

Tensor data(DType d, IntList shape) {
  return (randn(shape, TensorOptions().dtype(DType::Float64)) * 10.0).to(d);
}
Tensor indices(int64_t high, IntList shape, DType t) {
  return randint(0, high, shape, TensorOptions().dtype(t));
}
Attrs int_attr(int64_t v) {
  Attrs a;
  a.ints[0] = v;
  return a;
}

TEST(CudaHostKernels, GathersMatchTheCpu) {
  manual_seed(1);
  for (DType d : kAll)
    for (DType it : kIndex) {
      const std::string tag = fmt::format("{} index {}", d, it);
      const Tensor x = data(d, {4, 5, 6});
      const Tensor xt = x.transpose(0, 2);
      for (int64_t dim = -3; dim < 3; ++dim) {
        const int64_t w = (dim + 3) % 3;
        expect_same(OpId::IndexSelect, {xt, indices(xt.sizes()[w], {7}, it)}, int_attr(dim),
                    fmt::format("index_select {} dim {}", tag, dim));
        expect_same(OpId::IndexSelect, {x, indices(x.sizes()[w], {9}, it).slice(0, 0, 9, 2)},
                    int_attr(dim), fmt::format("index_select {} dim {} strided index", tag, dim));
        DimVector gs = {3, 4, 2};
        gs[w] = 9;
        const Tensor g = indices(xt.sizes()[w], IntList(gs), it);
        expect_same(OpId::Gather, {xt, g}, int_attr(dim), fmt::format("gather {} {}", tag, dim));
        expect_same(OpId::Gather, {xt, g.transpose(0, 1).contiguous().transpose(0, 1)},
                    int_attr(dim), fmt::format("gather {} {} strided index", tag, dim));
      }
      const Tensor wt = data(d, {7, 3});
      const Tensor e = indices(7, {2, 4}, it);
      expect_same(OpId::Embedding, {wt, e}, Attrs{}, "embedding " + tag);
      expect_same(OpId::Embedding, {wt.t().contiguous().t(), e.t()}, Attrs{},
                  "embedding strided " + tag);
      expect_same(OpId::Embedding, {wt, indices(7, {}, it)}, Attrs{}, "embedding 0-dim " + tag);
      expect_same(OpId::IndexSelect, {data(d, {}), zeros({1}, TensorOptions().dtype(it))},
                  int_attr(0), "index_select 0-dim " + tag);
    }
}

TEST(CudaHostKernels, ScatterAddOneHotAndTrianglesMatchTheCpu) {
  manual_seed(2);
  for (DType d : kAll) {
    for (DType it : kIndex)
      for (int64_t dim : {0, 1, -1}) {
        const Tensor x = data(d, {5, 6});
        const Tensor idx = dim == 0 ? indices(5, {40, 4}, it) : indices(6, {4, 50}, it);
        const Tensor src =
            data(d, {60, 60}).slice(0, 0, idx.sizes()[0]).slice(1, 0, idx.sizes()[1]);
        expect_same(OpId::ScatterAdd, {x.t().contiguous().t(), idx, src}, int_attr(dim),
                    fmt::format("scatter_add {} index {} dim {}", d, it, dim));
      }
    const Tensor x = data(d, {3, 4, 5});
    for (int64_t k = -6; k <= 7; ++k) {
      expect_same(OpId::Tril, {x}, int_attr(k), fmt::format("tril {} {}", d, k));
      expect_same(OpId::Triu, {x.transpose(1, 2)}, int_attr(k), fmt::format("triu {} {}", d, k));
    }
  }
  expect_same(OpId::OneHot, {randint(0, 5, {3, 4}).t()}, int_attr(5), "one_hot");
  expect_same(OpId::OneHot, {randint(0, 5, {})}, int_attr(5), "one_hot 0-dim");
}

TEST(CudaHostKernels, FactoriesMatchTheCpu) {
  auto attrs = [](IntList dims, DType d, Scalar a, Scalar b) {
    Attrs r;
    r.dims = dims.dims();
    r.dtype = d;
    r.scalars = {a, b};
    return r;
  };
  for (DType d : {DType::Int32, DType::Int64, DType::Float32, DType::Float64}) {
    for (auto [s, st, n] : std::vector<std::tuple<Scalar, Scalar, int64_t>>{
             {Scalar(int64_t{-3}), Scalar(int64_t{2}), 11},
             {Scalar(0.5), Scalar(0.1), 40},
             {Scalar(int64_t{7}), Scalar(-0.3), 30}})
      expect_same(OpId::Arange, {}, attrs({n}, d, s, st), fmt::format("arange {}", d));
    for (auto [s, e, n] : std::vector<std::tuple<double, double, int64_t>>{
             {0, 1, 7}, {-3.3, 17.9, 101}, {5, 5, 1}, {2, -9, 2}, {1e6, -1e6, 1000}})
      expect_same(OpId::Linspace, {}, attrs({n}, d, Scalar(s), Scalar(e)),
                  fmt::format("linspace {} {} {} {}", d, s, e, n));
  }
  expect_same(OpId::Arange, {},
              attrs({50}, DType::Int64, Scalar(int64_t{1} << 40), Scalar(int64_t{7})),
              "arange beyond 2^32");
  for (DType d : kAll) expect_same(OpId::Eye, {}, attrs({6, 6}, d, 0, 0), "eye");
}

TEST(CudaHostKernels, CatAndAsStridedScatterMatchTheCpu) {
  manual_seed(4);
  const Tensor a = data(DType::Float32, {2, 3}), b = data(DType::Int32, {5, 2}).t();
  expect_same(OpId::Cat, {a, zeros({0}), b}, int_attr(1), "cat");
  expect_same(OpId::Cat, {a, a}, int_attr(-2), "cat dim 0");
  for (DType d : kAll)
    expect_same(OpId::AsStridedScatter, {data(d, {4, 5}), data(d, {2, 2})},
                strided_attrs({2, 2}, {5, 2}, 1), "as_strided_scatter");
}

TEST(CudaHostKernels, RandnAndRandintMatchTheCpu) {
  for (DType d : kAll) {
    Attrs a;
    a.dims = {1000};
    a.dtype = d;
    set_philox(a, 0x0123456789abcdefull, 0xfffffffffffffff0ull);  // the counter wraps
    a.ints[2] = 1000;
    a.scalars = {Scalar(int64_t{-7}), Scalar(int64_t{100000})};
    if (d == DType::Bool) a.scalars = {Scalar(int64_t{0}), Scalar(int64_t{2})};
    expect_same(OpId::Randint, {}, a, fmt::format("randint {}", d));
    if (d == DType::Int64) {
      a.scalars = {Scalar(INT64_MIN), Scalar(INT64_MAX)};
      expect_same(OpId::Randint, {}, a, "randint full range");
    }
    // Host libm here: bitwise; CUDA's log/cos on a GPU: within docs/random.md's bound.
    if (is_floating(d)) expect_same(OpId::Randn, {}, a, fmt::format("randn {}", d));
  }
}

// rand and dropout are loop kernels (launched by cuda_target.cpp): run here with the words of a
// rank-1 launch (CudaArgLayout), as the launcher lays out a dense output.
TEST(CudaHostKernels, RandAndDropoutLoopKernelsMatchTheCpu) {
  const uint64_t seed = 0x0123456789abcdefull, counter = 0xffffffffffffff00ull;
  const auto& table = kiln_host_kernels();
  for (DType t : {DType::Float32, DType::Float64}) {
    const std::string dt(dtype_name(t));
    const int64_t n = 1000;
    const uint64_t words[4] = {seed & 0xffffffffu, seed >> 32, counter & 0xffffffffu,
                               counter >> 32};
    const Tensor out = empty_tensor({n}, t, Device::cpu());
    const jit::cuda::CudaArgLayout r{1, 4};
    std::vector<uint64_t> w(static_cast<size_t>(r.words()));
    w[0] = n, w[1] = 1, w[jit::cuda::CudaArgLayout::kSizes] = n;
    w[r.ptr(0)] = reinterpret_cast<uint64_t>(out.impl()->data());
    w[r.stride(0, 0)] = itemsize(t);
    for (int p = 0; p < 4; ++p) w[r.param(p)] = words[p];
    table.at("kiln_rand_" + dt)(w);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t c = counter + static_cast<uint64_t>(i);
      if (t == DType::Float32)
        ASSERT_EQ(out.data_ptr<float>()[i], random_uniform<float>(seed, c)) << i;
      else
        ASSERT_EQ(out.data_ptr<double>()[i], random_uniform<double>(seed, c)) << i;
    }
    const Tensor x = randn({n}, TensorOptions().dtype(t));
    for (double p : {0.1, 0.5, 1.0 / 3.0}) {
      Attrs a;
      a.scalars[0] = p;
      set_philox(a, seed, counter);
      const Tensor in[] = {x};
      const Tensor ref = empty_tensor({n}, t, Device::cpu());
      op_def(OpId::Dropout).eager(OpCall{OpId::Dropout, in, a}, ref);
      const jit::cuda::CudaArgLayout dl{2, 5};
      std::vector<uint64_t> v(static_cast<size_t>(dl.words()));
      v[0] = n, v[1] = 1, v[jit::cuda::CudaArgLayout::kSizes] = n;
      v[dl.ptr(0)] = reinterpret_cast<uint64_t>(out.impl()->data());
      v[dl.stride(0, 0)] = itemsize(t);
      v[dl.ptr(1)] = reinterpret_cast<uint64_t>(x.impl()->data());
      v[dl.stride(1, 0)] = itemsize(t);
      v[dl.param(0)] = std::bit_cast<uint64_t>(p);
      for (int q = 0; q < 4; ++q) v[dl.param(q + 1)] = words[q];
      table.at("kiln_dropout_" + dt)(v);
      EXPECT_EQ(std::memcmp(ref.impl()->data(), out.impl()->data(), n * itemsize(t)), 0)
          << "dropout " << dt << " p=" << p;
    }
  }
}

// A bad index is reported to the error word (op id + 1, index, dim, size), first error wins,
// and the element is written as 0.
TEST(CudaHostKernels, BadIndicesReachTheErrorWord) {
  init();
  HostRunner runner;
  auto run = [&](OpId id, std::vector<Tensor> in, const Attrs& a) {
    OutputMeta m;
    op_def(id).meta(OpCall{id, in, a}, m);
    Tensor out = empty_tensor(m.sizes, m.dtype, Device::cpu());
    device_kernel(op_def(id), id, Device::cuda(0))(OpCall{id, in, a}, out);
    return out;
  };
  const Tensor x = arange(15, TensorOptions().dtype(DType::Float32)).view({5, 3});
  const Tensor y = run(OpId::IndexSelect, {x, from_vector<int64_t>({1, 7, 2}, {3})}, int_attr(0));
  EXPECT_EQ(runner.error, (std::array<uint64_t, 4>{uint64_t(OpId::IndexSelect) + 1, 7, 0, 5}));
  EXPECT_EQ(y.select(0, 1).sum().item<float>(), 0.0f);
  EXPECT_EQ(y.select(0, 2).sum().item<float>(), 6.0f + 7 + 8);
  run(OpId::Gather, {x, from_vector<int64_t>({-1}, {1, 1})}, int_attr(1));  // first error wins
  EXPECT_EQ(runner.error[0], uint64_t(OpId::IndexSelect) + 1);
  const struct {
    OpId op;
    std::vector<Tensor> in;
    Attrs attrs;
    uint64_t value, dim, size;
  } cases[] = {
      {OpId::Gather,
       {x, from_vector<int64_t>({-1}, {1, 1})},
       int_attr(1),
       static_cast<uint64_t>(-1),
       1,
       3},
      {OpId::Embedding, {x, from_vector<int32_t>({0, 5}, {2})}, Attrs{}, 5, 0, 5},
      {OpId::ScatterAdd, {x, from_vector<int64_t>({9}, {1, 1}), x}, int_attr(0), 9, 0, 5},
      {OpId::OneHot, {from_vector<int64_t>({1, 6}, {2})}, int_attr(5), 6, 1, 5},
  };
  for (const auto& c : cases) {
    runner.error = {};
    run(c.op, c.in, c.attrs);
    EXPECT_EQ(runner.error, (std::array<uint64_t, 4>{uint64_t(c.op) + 1, c.value, c.dim, c.size}))
        << op_name(c.op);
  }
}

}  // namespace
}  // namespace kiln
