// On a GPU: the index, shape and factory ops against the CPU, bitwise (they copy, or evaluate the
// CPU's formulas in the same IEEE operations; scatter_add adds in the CPU's order): every dtype,
// Int32 and Int64 indices, every dim (negative too), non-contiguous inputs; views of CUDA tensors
// (metadata only, sharing storage); and the kernel-side errors: an index out of range raises at
// the next sync point, naming the op, the index and the valid range, and the device stays
// usable. Every test skips, saying why, without a usable GPU.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_compare_util.h"
#include "cuda_device_util.h"
#include "expect_error.h"
#include "kiln/kiln.h"
#include "ops/strided.h"
#include "runtime/dispatcher.h"

namespace kiln {
namespace {

using testing::kAll;
using testing::kGpu;

using testing::expect_bitwise;

constexpr DType kIndex[] = {DType::Int32, DType::Int64};

Tensor data(DType d, IntList shape) {
  return (randn(shape, TensorOptions().dtype(DType::Float64)) * 10.0).to(d);
}
Tensor indices(int64_t high, IntList shape, DType t) {
  return randint(0, high, shape, TensorOptions().dtype(t));
}
Tensor gpu(const Tensor& t) { return t.to(kGpu); }

TEST(CudaIndex, IndexSelectGatherEmbedding) {
  KILN_SKIP_WITHOUT_GPU();
  manual_seed(1);
  for (DType d : kAll)
    for (DType it : kIndex) {
      const std::string tag = fmt::format("{} index {}", d, it);
      const Tensor x = data(d, {4, 5, 6});
      const Tensor xt = x.transpose(0, 2);  // [6, 5, 4], strided
      for (int64_t dim = -3; dim < 3; ++dim) {
        const int64_t w = (dim + 3) % 3;
        const Tensor xg = gpu(x).transpose(0, 2);  // the same strided view on the device
        const Tensor i1 = indices(xt.sizes()[w], {7}, it);
        expect_bitwise(index_select(xt, dim, i1), index_select(xg, dim, gpu(i1)),
                       fmt::format("index_select {} dim {}", tag, dim));
        const Tensor i2 = indices(x.sizes()[w], {9}, it);  // a strided index on both devices
        expect_bitwise(index_select(x, dim, i2.slice(0, 0, 9, 2)),
                       index_select(gpu(x), dim, gpu(i2).slice(0, 0, 9, 2)),
                       fmt::format("index_select {} dim {} strided index", tag, dim));
        DimVector gs = {3, 4, 2};
        gs[w] = 9;
        const Tensor g = indices(xt.sizes()[w], IntList(gs), it);
        expect_bitwise(gather(xt, dim, g), gather(xg, dim, gpu(g)),
                       fmt::format("gather {} dim {}", tag, dim));
        expect_bitwise(gather(xt, dim, g.transpose(0, 1).contiguous().transpose(0, 1)),
                       gather(xg, dim, gpu(g.transpose(0, 1).contiguous()).transpose(0, 1)),
                       fmt::format("gather {} dim {} strided index", tag, dim));
      }
      const Tensor wt = data(d, {7, 3});
      const Tensor e = indices(7, {2, 4}, it);
      expect_bitwise(embedding(wt, e), embedding(gpu(wt), gpu(e)), "embedding " + tag);
      expect_bitwise(embedding(wt.t().contiguous().t(), e.t()),
                     embedding(gpu(wt.t().contiguous()).t(), gpu(e).t()),
                     "embedding strided " + tag);
      const Tensor e0 = indices(7, {}, it);
      expect_bitwise(embedding(wt, e0), embedding(gpu(wt), gpu(e0)), "embedding 0-dim " + tag);
      const Tensor s0 = data(d, {});
      const Tensor z = zeros({1}, TensorOptions().dtype(it));
      expect_bitwise(index_select(s0, 0, z), index_select(gpu(s0), 0, gpu(z)),
                     "index_select 0-dim " + tag);
      const Tensor none = zeros({0}, TensorOptions().dtype(it));
      expect_bitwise(index_select(x, 1, none), index_select(gpu(x), 1, gpu(none)),
                     "index_select empty " + tag);
    }
}

TEST(CudaIndex, ScatterAddIsTheCpusOrder) {
  KILN_SKIP_WITHOUT_GPU();
  manual_seed(2);
  for (DType d : kAll)
    for (DType it : kIndex)
      for (int64_t dim : {0, 1, -1}) {
        const Tensor x = data(d, {5, 6});
        // Many repeats of few targets: float sums depend on the order of their additions.
        const Tensor idx = dim == 0 ? indices(5, {40, 4}, it) : indices(6, {4, 50}, it);
        const Tensor src =
            data(d, {60, 60}).slice(0, 0, idx.sizes()[0]).slice(1, 0, idx.sizes()[1]);
        const Tensor xs = x.t().contiguous().t();  // a strided base
        expect_bitwise(
            scatter_add(xs, dim, idx, src),
            scatter_add(gpu(x.t().contiguous()).t(), dim, gpu(idx), gpu(src.contiguous())),
            fmt::format("scatter_add {} index {} dim {}", d, it, dim));
      }
}

TEST(CudaIndex, OneHotTrianglesAndFactories) {
  KILN_SKIP_WITHOUT_GPU();
  manual_seed(3);
  const Tensor c = randint(0, 5, {3, 4});
  expect_bitwise(one_hot(c.t(), 5), one_hot(gpu(c).t(), 5), "one_hot");
  expect_bitwise(one_hot(c, -1), one_hot(gpu(c), -1), "one_hot inferred");
  for (DType d : kAll) {
    const Tensor x = data(d, {3, 4, 5});
    for (int64_t k = -6; k <= 7; ++k) {
      expect_bitwise(tril(x, k), tril(gpu(x), k), fmt::format("tril {} k={}", d, k));
      expect_bitwise(triu(x.transpose(1, 2), k), triu(gpu(x).transpose(1, 2), k),
                     fmt::format("triu {} k={}", d, k));
    }
    const auto cpu = TensorOptions().dtype(d), dev = TensorOptions().dtype(d).device(kGpu);
    expect_bitwise(eye(7, cpu), eye(7, dev), fmt::format("eye {}", d));
    if (d == DType::Bool) continue;
    expect_bitwise(arange(-3, 40, 3, cpu), arange(-3, 40, 3, dev), fmt::format("arange {}", d));
    expect_bitwise(arange(0.5, 9.0, 0.1, cpu), arange(0.5, 9.0, 0.1, dev),
                   fmt::format("arange float steps {}", d));
    expect_bitwise(arange(7, -2.2, -0.3, cpu), arange(7, -2.2, -0.3, dev),
                   fmt::format("arange down {}", d));
    for (auto [s, e, n] : std::vector<std::tuple<double, double, int64_t>>{
             {0, 1, 7}, {-3.3, 17.9, 1001}, {5, 5, 1}, {2, -9, 2}, {1e6, -1e6, 1000}, {0, 1, 0}})
      expect_bitwise(linspace(s, e, n, cpu), linspace(s, e, n, dev),
                     fmt::format("linspace {} {} {} {}", d, s, e, n));
  }
  expect_bitwise(
      arange(int64_t{1} << 40, (int64_t{1} << 40) + 100, 7),
      arange(int64_t{1} << 40, (int64_t{1} << 40) + 100, 7, TensorOptions().device(kGpu)),
      "arange Int64 beyond 2^32");
}

TEST(CudaIndex, CatAndAsStridedScatter) {
  KILN_SKIP_WITHOUT_GPU();
  manual_seed(4);
  const Tensor a = data(DType::Float32, {2, 3}), b = data(DType::Int32, {5, 2}).t();
  const Tensor legacy = zeros({0});
  expect_bitwise(cat({a, legacy, b}, 1), cat({gpu(a), gpu(legacy), gpu(b.t()).t()}, 1),
                 "cat promoted, strided, a legacy empty tensor");
  expect_bitwise(cat({a, a, a}, -2), cat({gpu(a), gpu(a), gpu(a)}, -2), "cat dim 0");
  expect_bitwise(stack({a, a}, 1), stack({gpu(a), gpu(a)}, 1), "stack");
  for (DType d : kAll) {
    const Tensor base = data(d, {4, 5}), src = data(d, {2, 2});
    const Attrs g = strided_attrs({2, 2}, {5, 2}, 1);
    const Tensor cb[] = {base, src}, gb[] = {gpu(base), gpu(src)};
    expect_bitwise(dispatch(OpId::AsStridedScatter, cb, g), dispatch(OpId::AsStridedScatter, gb, g),
                   fmt::format("as_strided_scatter {}", d));
  }
}

// Views of CUDA tensors are metadata over the same device storage: no kernel, and a write
// through the view shows in the base.
TEST(CudaIndex, ViewsAreMetadataOnly) {
  KILN_SKIP_WITHOUT_GPU();
  const Tensor x = arange(24, TensorOptions().dtype(DType::Float32)).view({2, 3, 4});
  const Tensor xg = gpu(x);
  const auto views = [](const Tensor& t) {
    return std::vector<Tensor>{
        t.view({6, 4}),       t.reshape({4, 6}),
        t.permute({2, 0, 1}), t.transpose(0, 2),
        t.slice(2, 1, 4, 2),  t.select(1, 2),
        t.narrow(2, 1, 2),    t.unsqueeze(1),
        t.squeeze(),          t.select(0, 1).t(),
        t.flatten(),          t.select(0, 0).select(0, 0).unsqueeze(0).expand({3, 4})};
  };
  const std::vector<Tensor> vc = views(x), vg = views(xg);
  for (size_t i = 0; i < vc.size(); ++i) {
    EXPECT_TRUE(vg[i].device().is_cuda()) << i;
    EXPECT_EQ(vg[i].strides(), vc[i].strides()) << i;
    expect_bitwise(vc[i], vg[i], fmt::format("view {}", i));
  }
  Tensor base = gpu(zeros({3, 4}));
  base.select(1, 2).fill_(5.0);  // through a strided view
  base.slice(0, 1, 3).mul_(2.0);
  Tensor ref = zeros({3, 4});
  ref.select(1, 2).fill_(5.0);
  ref.slice(0, 1, 3).mul_(2.0);
  expect_bitwise(ref, base, "writes through views reach the base");
}

// An index out of range found by a kernel raises at the next sync point, naming the op, the
// index and the range; the word is cleared, so the next op and the next sync work.
TEST(CudaIndex, KernelSideErrorsRaiseAtTheNextSync) {
  KILN_SKIP_WITHOUT_GPU();
  const Tensor x = gpu(arange(15, TensorOptions().dtype(DType::Float32)).view({5, 3}));
  const Tensor bad = gpu(from_vector<int64_t>({1, 7, 2}, {3}));
  const Tensor bad2 = gpu(from_vector<int64_t>({1, 7, 2}, {3, 1}));
  const Tensor neg = gpu(from_vector<int64_t>({-1}, {1, 1}));
  struct Case {
    std::string op, what;
    std::function<Tensor()> run;
  };
  const std::vector<Case> cases = {
      {"index_select", "index 7 is out of range for dim 0 of size 5",
       [&] { return index_select(x, 0, bad); }},
      {"gather", "index 7 is out of range for dim 0 of size 5", [&] { return gather(x, 0, bad2); }},
      {"gather", "index -1 is out of range for dim 1 of size 3", [&] { return gather(x, 1, neg); }},
      {"embedding", "index 7 is out of range for dim 0 of size 5",
       [&] { return embedding(x, bad); }},
      {"scatter_add", "index 7 is out of range for dim 0 of size 5",
       [&] { return scatter_add(x, 0, bad2, x); }},
      {"one_hot", "index 7 is out of range for dim 1 of size 5", [&] { return one_hot(bad, 5); }},
  };
  for (const Case& c : cases) {
    Tensor y;
    EXPECT_NO_THROW(y = c.run()) << c.op;  // the launch returns before the kernel runs
    testing::expect_error([&] { (void)y.to(Device::cpu()); }, c.op + ": " + c.what,
                          "found on cuda:0 at the next sync");
    // Cleared: the device works and the next sync raises nothing.
    expect_bitwise(arange(15, TensorOptions().dtype(DType::Float32)).view({5, 3}) + 1.0f, x + 1.0f,
                   "the next op after " + c.op);
    EXPECT_NO_THROW(kiln::sync());
  }
  // Other sync points raise it too; the first error wins.
  (void)gather(x, 0, bad2);
  (void)index_select(x, 1, bad);
  testing::expect_error([] { kiln::sync(); }, "gather: index 7", "dim 0 of size 5");
  (void)embedding(x, bad);
  testing::expect_error([&] { (void)x.select(0, 0).select(0, 0).item<float>(); },
                        "embedding: index 7");
  // The CPU raises eagerly, naming the same op.
  testing::expect_error([&] { (void)gather(x.to(Device::cpu()), 0, bad2.to(Device::cpu())); },
                        "gather: index 7 is out of range for dim 0 of size 5");
}

}  // namespace
}  // namespace kiln
