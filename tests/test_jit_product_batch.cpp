// Product batches of JIT plans (jit/plan/product_batch.h; docs/jit.md "Matmul steps"): a
// recorded RNN loop's input products x[t] @ W^T run as one GEMM over xs's stacked rows, bitwise
// equal to eager's separate products, with 1, 2 and 4 threads, Float32 and Float64; slices in
// any order batch, slices with gaps or of separate tensors run one by one; a plan made at one
// batch size runs another; products that are outputs, or a batch over the size cap, stay apart;
// KILN_JIT_BATCH_PRODUCTS=0 plans no batch; a scan's input products (rnn_scan), and a map's,
// run before the loop, bitwise, except where its input's steps are not rows apart or the body
// returns the product; where the probe finds other bits, the products' own blocks run in one
// parallel loop (counted apart); the probe's answer is the rows' own comparison and is asked of
// BLAS once per shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jit/plan/jit_plan.h"
#include "jit/plan/product_batch.h"
#include "jit_recorded_util.h"
#include "ops/cpu/blas_gemm.h"
#include "runtime/dispatcher.h"
#include "runtime/parallel.h"

namespace kiln {
namespace {

using testing::ConfigOverride;
using testing::JitMode;

using JitProductBatchTest = testing::JitRecordedTest<>;

// The batches of every cached region's JIT plan: their sizes (members each).
std::vector<size_t> plan_batches() {
  std::vector<size_t> sizes;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    const std::shared_ptr<tracer::RegionPlan> p = r->jit_plan();
    const auto* jp = dynamic_cast<const jit::JitPlan*>(p.get());
    if (jp == nullptr) continue;
    for (const jit::ProductBatch& b : jp->product_batches()) sizes.push_back(b.steps.size());
  }
  return sizes;
}

struct Rnn {
  Tensor xs, w, u, b, h0;
};

Rnn make_rnn(int64_t steps, int64_t batch, int64_t hidden, DType dt, uint64_t seed) {
  Rnn r;
  r.xs = testing::eager_normal({steps, batch, hidden}, seed, dt);
  r.w = testing::eager_normal({hidden, hidden}, seed + 1, dt);
  r.u = testing::eager_normal({hidden, hidden}, seed + 2, dt);
  r.b = testing::eager_normal({hidden}, seed + 3, dt);
  r.h0 = testing::eager_normal({batch, hidden}, seed + 4, dt);
  return r;
}

// perf/workloads/rnn.cpp's cell over the steps `order` picks: h' = tanh(x W^T + b + h U^T).
TensorList run_rnn(const Rnn& r, const std::vector<int64_t>& order) {
  NoGradGuard no_grad;
  const Tensor scaled_w = r.w, scaled_u = r.u;
  Tensor h = r.h0 * 0.1;
  std::vector<Tensor> hs;
  for (int64_t t : order) {
    h = tanh(linear(r.xs.select(0, t), scaled_w, r.b) * 0.1 + linear(h, scaled_u) * 0.1);
    hs.push_back(h);
  }
  return {h, stack(hs, 0)};
}

std::vector<int64_t> iota_steps(int64_t n, int64_t step = 1, int64_t first = 0) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(first + i * step);
  return v;
}

// Whether this machine's BLAS gives batched rows eager's bits for r's input products, in the
// current context (the answer the plan got).
bool keeps_bits(const Rnn& r, int64_t n) {
  const int64_t batch = r.xs.size(1), hidden = r.xs.size(2);
  return jit::batch_keeps_bits(
      {r.xs.dtype(), n, batch, hidden, hidden, true, num_threads(), in_parallel_region()});
}

// The two ways a batch runs: one GEMM (the probe agreed), or the products' own blocks in one
// parallel loop (it did not, and eager splits each product into blocks).
struct Runs {
  int64_t one_gemm = 0, blocked = 0;
};
Runs runs_so_far() { return {jit::batched_product_runs(), jit::blocked_product_runs()}; }

// How one run of a batch of r's n input products runs here, in the current context: one GEMM,
// or (the probe said no) the products' own blocks or single-threaded calls in one loop.
Runs per_run(const Rnn& r, int64_t n) {
  if (keeps_bits(r, n)) return {1, 0};
  const Tensor slice = r.xs.select(0, 0), wt = r.w.t();
  const bool split = blas::plan_split_2d(slice.impl(), wt.impl(), r.xs.dtype()).blocks() >= 2;
  const bool one_thread = blas::threads_for(slice.size(0), wt.size(1), slice.size(1)) == 1;
  return {0, split || one_thread ? 1 : 0};
}

// Each way's runs since `before`: `runs` runs of `each`.
void expect_runs(const Runs& before, const Runs& each, int64_t runs, const std::string& what) {
  const Runs now = runs_so_far();
  EXPECT_EQ(now.one_gemm - before.one_gemm, each.one_gemm * runs) << what << ": one GEMM";
  EXPECT_EQ(now.blocked - before.blocked, each.blocked * runs) << what << ": blocks";
}

// Runs `check(r, what)` for three RNN shapes (Float32 and Float64) at 1, 2 and 4 threads, each
// from a cold region cache.
void for_each_rnn_case(uint64_t seed,
                       const std::function<void(const Rnn&, const std::string&)>& check) {
  struct Case {
    int64_t steps, batch, hidden;
    DType dt;
  };
  for (const Case& c :
       {Case{12, 32, 64, kFloat32}, Case{16, 64, 256, kFloat32}, Case{8, 24, 48, kFloat64}})
    for (int threads : {1, 2, 4}) {
      ConfigOverride<int> nt(config().num_threads, threads);
      tracer::RegionCache::instance().clear();
      check(make_rnn(c.steps, c.batch, c.hidden, c.dt, seed),
            std::to_string(c.steps) + " steps of " + std::to_string(c.batch) + "x" +
                std::to_string(c.hidden) + " " + std::string(dtype_name(c.dt)) + ", " +
                std::to_string(threads) + " threads");
    }
}

TEST_F(JitProductBatchTest, RnnInputProductsRunAsOneGemmBitwise) {
  for_each_rnn_case(40, [](const Rnn& r, const std::string& what) {
    const int64_t steps = r.xs.size(0);
    const Runs before = runs_so_far();
    testing::expect_iterations_match([&](int) { return run_rnn(r, iota_steps(steps)); }, 3, what);
    EXPECT_EQ(plan_batches(), std::vector<size_t>{static_cast<size_t>(steps)}) << what;
    // Three recorded runs of one plan: each one GEMM where the probe found eager's bits.
    expect_runs(before, per_run(r, steps), 3, what);
  });
}

TEST_F(JitProductBatchTest, SlicesInAnyOrderBatchGapsAndSeparateTensorsDoNot) {
  ConfigOverride<int> nt(config().num_threads, 2);
  const Rnn r = make_rnn(12, 32, 64, kFloat32, 50);
  const Runs each = per_run(r, 12);
  // Backwards in time (a bidirectional RNN's second direction): the slots are a permutation.
  Runs before = runs_so_far();
  testing::expect_iterations_match([&](int) { return run_rnn(r, iota_steps(12, -1, 11)); }, 2,
                                   "backwards");
  expect_runs(before, each, 2, "backwards");
  // Every other step: the rows between the slices are not the products'.
  tracer::RegionCache::instance().clear();
  before = runs_so_far();
  testing::expect_iterations_match([&](int) { return run_rnn(r, iota_steps(6, 2)); }, 2,
                                   "every other step");
  EXPECT_EQ(plan_batches(), std::vector<size_t>{6});
  expect_runs(before, {}, 2, "every other step");
  // Each step's input its own tensor: a batch in the plan, never one storage in a run.
  tracer::RegionCache::instance().clear();
  std::vector<Tensor> parts;
  for (int64_t t = 0; t < 6; ++t) parts.push_back(testing::eager_normal({32, 64}, 60 + t));
  before = runs_so_far();
  testing::expect_iterations_match(
      [&](int) {
        NoGradGuard no_grad;
        Tensor h = r.h0;
        for (const Tensor& x : parts) h = tanh(linear(x, r.w, r.b) * 0.1 + linear(h, r.u) * 0.1);
        return TensorList{h};
      },
      2, "separate tensors");
  EXPECT_EQ(plan_batches(), std::vector<size_t>{6});
  expect_runs(before, {}, 2, "separate tensors");
}

// Plans are size-generic: the plan made at batch 32 runs batch 48 (no new plan), and the new
// shape is probed and batched in its own right.
TEST_F(JitProductBatchTest, APlanMadeAtOneBatchSizeRunsAnother) {
  ConfigOverride<int> nt(config().num_threads, 2);
  const Rnn small = make_rnn(10, 32, 64, kFloat32, 70), big = make_rnn(10, 48, 64, kFloat32, 80);
  const Runs before = runs_so_far();
  testing::expect_iterations_match(
      [&](int it) { return run_rnn(it < 2 ? small : big, iota_steps(10)); }, 4, "32 then 48");
  EXPECT_EQ(tracer::RegionCache::instance().regions().size(), 1u);
  EXPECT_EQ(plan_batches(), std::vector<size_t>{10});
  const Runs a = per_run(small, 10), b = per_run(big, 10);
  expect_runs(before, {a.one_gemm + b.one_gemm, a.blocked + b.blocked}, 2, "32 then 48");
}

TEST_F(JitProductBatchTest, OutputsTooLargeBatchesAndTheSwitchKeepProductsApart) {
  ConfigOverride<int> nt(config().num_threads, 2);
  const Tensor xs = testing::eager_normal({8, 16, 32}, 90), w = testing::eager_normal({24, 32}, 91);
  // Products the program returns: their values must be fresh tensors, as eager's are.
  testing::expect_iterations_match(
      [&](int) {
        TensorList out;
        for (int64_t t = 0; t < 8; ++t) out.push_back(xs.select(0, t).matmul(w.t()));
        return out;
      },
      2, "outputs");
  EXPECT_TRUE(plan_batches().empty());
  // Switched off.
  {
    ConfigOverride<bool> off(config().jit_batch_products, false);
    tracer::RegionCache::instance().clear();
    const Rnn r = make_rnn(6, 16, 32, kFloat32, 95);
    testing::expect_iterations_match([&](int) { return run_rnn(r, iota_steps(6)); }, 2, "off");
    EXPECT_TRUE(plan_batches().empty());
  }
  // 65 products of 256 x 1024: 65 MiB of product, over the 64 MiB cap.
  tracer::RegionCache::instance().clear();
  const Tensor xl = testing::eager_normal({65, 256, 4}, 96),
               wl = testing::eager_normal({1024, 4}, 97);
  const Runs before = runs_so_far();
  testing::expect_iterations_match(
      [&](int) {
        NoGradGuard no_grad;
        Tensor s = zeros({256, 1024});
        for (int64_t t = 0; t < 65; ++t) s = s + relu(xl.select(0, t).matmul(wl.t()));
        return TensorList{s};
      },
      2, "over the cap");
  EXPECT_EQ(plan_batches(), std::vector<size_t>{65});
  expect_runs(before, {}, 2, "over the cap");
}

// perf/workloads/rnn.cpp's rnn_scan: the same cell as one kiln::scan, returning h and the
// stacked states (and, with `return_products`, each step's x_t U^T too).
TensorList run_rnn_scan(const Rnn& r, bool return_products = false) {
  NoGradGuard no_grad;
  auto [h, ys] = scan(
      [&](const TensorList& carry, const TensorList& x) {
        Tensor p = linear(x[0], r.w, r.b);
        Tensor next = tanh(p * 0.1 + linear(carry[0], r.u) * 0.1);
        if (return_products)
          return std::pair<TensorList, TensorList>{{next}, {next, x[0].matmul(r.u.t())}};
        return std::pair<TensorList, TensorList>{{next}, {next}};
      },
      {r.h0 * 0.1}, {r.xs});
  TensorList out = h;
  out.insert(out.end(), ys.begin(), ys.end());
  return out;
}

TEST_F(JitProductBatchTest, ScanInputProductsRunBeforeTheLoopBitwise) {
  for_each_rnn_case(140, [](const Rnn& r, const std::string& what) {
    const Runs before = runs_so_far();
    testing::expect_iterations_match([&](int) { return run_rnn_scan(r); }, 3, what);
    expect_runs(before, per_run(r, r.xs.size(0)), 3, what);
  });
}

// A map's body multiplying each slice by a weight: the products before the loop, bitwise.
TEST_F(JitProductBatchTest, MapInputProductsRunBeforeTheLoopBitwise) {
  for_each_rnn_case(160, [](const Rnn& r, const std::string& what) {
    const Runs before = runs_so_far();
    testing::expect_iterations_match(
        [&](int) {
          NoGradGuard no_grad;
          return map([&](const TensorList& x) { return TensorList{relu(linear(x[0], r.w, r.b))}; },
                     {r.xs});
        },
        3, what);
    expect_runs(before, per_run(r, r.xs.size(0)), 3, what);
  });
}

// Where the probe says no (forced here, as on a CPU whose kernels give other bits), the batch
// runs each product's own calls in one loop: its row or column blocks, or its single-threaded
// call (Float64 too); a loop and a scan, bitwise.
TEST_F(JitProductBatchTest, WhereTheProbeSaysNoTheProductsOwnCallsRunInOneLoop) {
  struct Forced {
    Forced() { jit::set_batch_probe_says_no(true); }
    ~Forced() { jit::set_batch_probe_says_no(false); }
  } forced;
  for_each_rnn_case(170, [](const Rnn& r, const std::string& what) {
    const int64_t steps = r.xs.size(0);
    const Runs each = per_run(r, steps);
    EXPECT_EQ(each.one_gemm, 0) << what;
    Runs before = runs_so_far();
    testing::expect_iterations_match([&](int) { return run_rnn(r, iota_steps(steps)); }, 2, what);
    expect_runs(before, each, 2, what + ", loop");
    before = runs_so_far();
    testing::expect_iterations_match([&](int) { return run_rnn_scan(r); }, 2, what);
    expect_runs(before, each, 2, what + ", scan");
  });
}

// What a scan keeps in its loop: a scanned input whose steps are not rows apart (a transposed
// view), and a product the body returns (x_t U^T: its rows would reach the user as views); the
// cell's x_t W^T still runs before the loop in the second case. Switched off, nothing does.
TEST_F(JitProductBatchTest, ScansKeepProductsTheyCannotStackInTheLoop) {
  ConfigOverride<int> nt(config().num_threads, 2);
  Rnn r = make_rnn(10, 32, 64, kFloat32, 150);
  const Runs each = per_run(r, 10);
  r.xs = testing::eager_normal({32, 10, 64}, 151).transpose(0, 1);
  Runs before = runs_so_far();
  testing::expect_iterations_match([&](int) { return run_rnn_scan(r); }, 2, "transposed xs");
  expect_runs(before, {}, 2, "transposed xs");
  tracer::RegionCache::instance().clear();
  r.xs = testing::eager_normal({10, 32, 64}, 152);
  before = runs_so_far();
  testing::expect_iterations_match([&](int) { return run_rnn_scan(r, true); }, 2,
                                   "a product returned");
  expect_runs(before, each, 2, "a product returned");
  ConfigOverride<bool> off(config().jit_batch_products, false);
  tracer::RegionCache::instance().clear();
  before = runs_so_far();
  testing::expect_iterations_match([&](int) { return run_rnn_scan(r); }, 2, "off");
  expect_runs(before, {}, 2, "off");
}

// The probe's answer is whether the rows agree, compared here by hand for every slice; and BLAS
// is asked once per shape (a second question is answered from memory).
TEST(JitProductBatchProbe, AnswersWhetherEveryRowAgreesOncePerShape) {
  jit::forget_batch_probes();
  for (DType dt : {kFloat32, kFloat64})
    for (int threads : {1, 2}) {
      ConfigOverride<int> nt(config().num_threads, threads);
      const int64_t n = 6, M = 40, N = 96, K = 80;
      const Tensor a = testing::eager_normal({n * M, K}, 100, dt);
      const Tensor b = testing::eager_normal({N, K}, 101, dt).t();
      const Tensor whole = empty_tensor({n * M, N}, dt, Device::cpu());
      ASSERT_TRUE(blas::gemm_2d(a.impl(), b.impl(), whole.impl()));
      bool agree = true;
      for (int64_t t = 0; t < n; ++t) {
        const Tensor part = empty_tensor({M, N}, dt, Device::cpu());
        const Tensor at = a.narrow(0, t * M, M);
        ASSERT_TRUE(blas::gemm_2d(at.impl(), b.impl(), part.impl()));
        agree = agree && std::memcmp(part.impl()->data(),
                                     static_cast<const char*>(whole.impl()->data()) +
                                         t * M * N * static_cast<int64_t>(itemsize(dt)),
                                     static_cast<size_t>(M * N * itemsize(dt))) == 0;
      }
      const jit::BatchShape shape{dt, n, M, N, K, true, threads, false};
      const int64_t probes = jit::batch_probes();
      EXPECT_EQ(jit::batch_keeps_bits(shape), agree) << dtype_name(dt) << ", " << threads;
      EXPECT_EQ(jit::batch_probes(), probes + 1);
      EXPECT_EQ(jit::batch_keeps_bits(shape), agree);
      EXPECT_EQ(jit::batch_probes(), probes + 1);
    }
}

}  // namespace
}  // namespace kiln
