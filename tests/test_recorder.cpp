// The recorder (KILN_JIT=1 without a JIT): lazy tensors, sync points, bitwise equality with eager
// mode, functionalized writes, the region cache (hits, scalar promotion, recompile limit), errors
// found by kernels, and the backend hand-off. The fuzzer (test_record_fuzz.cpp) and the thread
// tests (test_record_threads.cpp) cover random programs and concurrency.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>
#include <type_traits>

#include "kiln/kiln.h"
#include "log_capture.h"
#include "record_util.h"
#include "runtime/config.h"
#include "runtime/init.h"
#include "runtime/logging.h"
#include "tracer/backend.h"
#include "tracer/flush_memo.h"
#include "tracer/graph_printer.h"
#include "tracer/interpreter.h"
#include "tracer/recorder.h"
#include "tracer/region_runner.h"

using namespace kiln;
using kiln::testing::bytes_of;
using kiln::testing::CacheDelta;
using kiln::testing::expect_bitwise_equal;
using kiln::testing::JitMode;

namespace {

Tensor ramp(std::vector<int64_t> shape, double start = 0.5, double step = 0.25) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (arange(n, DType::Float32) * step + start).reshape(shape);
}

// Collects what the tracer's logger writes while it lives.
class TracerLog : public kiln::testing::LogCapture {
 public:
  TracerLog() : LogCapture(logging::Subsystem::Tracer) {}
};

// Restores one config field at the end of a scope.
template <class T>
class ConfigOverride {
 public:
  // The bool and int fields are Relaxed<T> (runtime/relaxed.h), the others plain.
  using Field = std::conditional_t<std::is_arithmetic_v<T>, Relaxed<T>, T>;
  ConfigOverride(Field& field, T value) : field_(field), saved_(field) { field_ = value; }
  ~ConfigOverride() { field_ = saved_; }

 private:
  Field& field_;
  T saved_;
};

// A small program with views, in-place writes, randomness and reductions.
std::vector<Tensor> program(const Tensor& x, const Tensor& w) {
  manual_seed(7);
  Tensor h = gelu(x.matmul(w.t()) + 0.5);
  Tensor d = dropout(h, 0.25, /*train=*/true);
  Tensor buf = zeros({4, 6});
  buf.slice(1, 1, 5).copy_(d);
  buf.select(0, 2).mul_(3.0);
  buf.t().slice(0, 0, 2).add_(1.0);
  Tensor s = softmax(buf, 1);
  Tensor m = s.sum({1}, /*keepdim=*/true);
  return {s, m, d, buf};
}

TEST(Recorder, OpsReturnLazyTensorsUntilASyncPoint) {
  JitMode jit(true);
  Tensor x = ramp({3, 4});
  kiln::sync();
  Tensor y = x * 2.0 + 1.0;
  EXPECT_TRUE(y.impl()->storage()->is_lazy());
  EXPECT_EQ(y.sizes(), (Shape{3, 4}));  // metadata is known at once
  EXPECT_EQ(tracer::pending_ops_this_thread(), 2);
  EXPECT_FLOAT_EQ(y.sum().item<float>(), (x.sum().item<float>() * 2 + 12));
  EXPECT_FALSE(y.impl()->storage()->is_lazy());
  EXPECT_EQ(tracer::pending_ops_this_thread(), 0);
}

TEST(Recorder, ShapeErrorsRaiseAtTheCall) {
  JitMode jit(true);
  Tensor a = ones({3}), b = ones({2});
  EXPECT_THROW(a + b, Error);
  EXPECT_THROW(a.matmul(b), Error);
  EXPECT_EQ((a + a).to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(Recorder, ProgramIsBitwiseEager) {
  Tensor x = ramp({4, 3}), w = ramp({4, 3}, -0.3, 0.05);
  std::vector<Tensor> eager;
  {
    JitMode mode(false);
    eager = program(x, w);
  }
  std::vector<Tensor> recorded;
  {
    JitMode mode(true);
    recorded = program(x, w);
  }
  ASSERT_EQ(eager.size(), recorded.size());
  for (size_t i = 0; i < eager.size(); ++i) expect_bitwise_equal(recorded[i], eager[i], "output");
}

TEST(Recorder, WritesThroughViewsOfLazyTensorsAreSeenEverywhere) {
  auto run = [] {
    Tensor base = zeros({3, 4});
    Tensor row = base.select(0, 1);
    Tensor col = base.t().select(0, 2);  // a column, through a transposed view
    row.fill_(2.0);                      // write through one view...
    col.add_(10.0);                      // ...and another
    Tensor seen_by_row = row * 1.0;      // read through a view after both writes
    base.mul_(2.0);                      // write the whole base
    return std::vector<Tensor>{base, row.clone(), col.clone(), seen_by_row};
  };
  std::vector<Tensor> e, r;
  {
    JitMode mode(false);
    e = run();
  }
  {
    JitMode mode(true);
    r = run();
  }
  for (size_t i = 0; i < e.size(); ++i) expect_bitwise_equal(r[i], e[i], "view write");
}

TEST(Recorder, InPlaceOnMaterializedTensorIsWrittenBack) {
  Tensor p = ramp({2, 3});
  const std::vector<float> before = p.to_vector<float>();
  const uint32_t version = p.version();
  JitMode jit(true);
  p.add_(1.0);
  EXPECT_EQ(p.version(), version + 1);  // the version bumps at the call, as in eager mode
  Tensor q = p * 2.0;                   // reads the written value
  // Reading p's memory directly (not through an op) flushes the pending write first.
  const float* data = static_cast<const float*>(p.impl()->data());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(data[i], before[i] + 1.0f);
  EXPECT_EQ(q.to_vector<float>()[0], (before[0] + 1.0f) * 2.0f);
}

// A mutated input's new value is computed straight into its memory when nothing reads the old
// contents afterwards (interpret(), destinations); a write whose own input overlaps the
// destination through another geometry (y.copy_(y.t())) must still read the old contents first.
TEST(Recorder, InPlaceWriteBackKeepsReadsOfOldContents) {
  auto program = [] {
    Tensor y = ramp({4, 4}), z = ramp({4, 4}, -1.0, 0.5), a = ramp({4, 4});
    Tensor b = ramp({4, 4}, 2.0), c = ramp({3});
    kiln::sync();             // materialized: the writes below are written back
    Tensor before = y * 1.0;  // the old contents, read before the write
    y.copy_(z);               // computed in place
    a.copy_(a.t());           // reads a through another geometry: not in place
    b.add_(b.t());
    c.mul_(2.0);
    c.add_(1.0);  // two writes in one segment
    return std::vector<Tensor>{y, before, a, b, c};
  };
  std::vector<Tensor> eager;
  {
    JitMode off(false);
    eager = program();
  }
  JitMode jit(true);
  for (int run = 0; run < 3; ++run) {  // first recording, lookup, followed repeat
    std::vector<Tensor> got = program();
    kiln::sync();
    for (size_t i = 0; i < got.size(); ++i) expect_bitwise_equal(got[i], eager[i]);
  }
}

TEST(Recorder, AliasedWriteFlushesAndStaysCorrect) {
  auto run = [] {
    Tensor x = ramp({3, 3});
    kiln::sync();
    x.add_(1.0);             // written through geometry x...
    Tensor y = x.t() * 1.0;  // ...then read through another geometry of the same memory
    x.t().slice(0, 0, 1).mul_(5.0);
    Tensor z = x + y;
    return std::vector<Tensor>{x, y, z};
  };
  std::vector<Tensor> e, r;
  {
    JitMode mode(false);
    e = run();
  }
  {
    JitMode mode(true);
    r = run();
  }
  for (size_t i = 0; i < e.size(); ++i) expect_bitwise_equal(r[i], e[i], "aliased");
}

// Eager reductions add in the order of their input's memory layout (ops/cpu/reduce_plan.h). A
// leaf written in place through a transposed layout reads, recorded, as a row-major value: a
// reduction of it must flush the write back first and reduce the user's memory, or its sum adds
// in another order (the last bits differ: JitFuzz seeds 1073 and 3966 found it).
TEST(Recorder, ReductionOfAnInputWrittenThroughATransposeKeepsEagerOrder) {
  auto run = [] {
    manual_seed(11);
    Tensor a = randn({3, 2, 512}).transpose(-1, -2);  // (3, 512, 2), not row-major
    kiln::sync();
    std::vector<Tensor> out;
    for (int it = 0; it < 3; ++it) {
      a.clamp_(-1.5, 1e30);
      out.push_back(a.sum());
      out.push_back(a.mean({1}));
      a.add_(0.125 * it);
    }
    out.push_back(a);
    return out;
  };
  std::vector<Tensor> e, r;
  {
    JitMode mode(false);
    e = run();
  }
  for (int rep = 0; rep < 2; ++rep) {  // recorded, then replayed from the region cache
    JitMode mode(true);
    r = run();
    kiln::sync();
    for (size_t i = 0; i < e.size(); ++i) expect_bitwise_equal(r[i], e[i], "transposed write");
  }
}

TEST(Recorder, DeadValuesAreNotComputed) {
  JitMode jit(true);
  Tensor x = ramp({8});
  kiln::sync();
  tracer::RegionCache::instance().clear();
  for (int i = 0; i < 5; ++i) (void)exp(x);  // dropped at once
  Tensor y = x + 1.0;
  kiln::sync();
  auto regions = tracer::RegionCache::instance().regions();
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0]->graph.nodes.size(), 1u) << tracer::print_graph(regions[0]->graph);
  EXPECT_EQ(y.to_vector<float>()[0], 1.5f);
}

TEST(Recorder, RegionGraphPrintsAsRecorded) {
  JitMode jit(true);
  Tensor x = ones({2, 3}), w = ones({4, 3});
  kiln::sync();
  tracer::RegionCache::instance().clear();
  Tensor y = relu(x.matmul(w.t()) * 0.5).sum({1});
  kiln::sync();
  auto regions = tracer::RegionCache::instance().regions();
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(tracer::print_graph(regions[0]->graph),
            // w.t() of a materialized tensor is a strided graph input, not a node.
            "graph(%0: Float32[2, 3], %1: Float32[3, 4]{strides=[1, 3]}) {\n"
            "  %2: Float32[2, 4] = matmul(%0, %1)\n"
            "  %3: Float32[2, 4] = mul(%2) {scalars=[0.5], ints=[1]}\n"
            "  %4: Float32[2, 4] = relu(%3)\n"
            "  %5: Float32[2] = sum(%4) {dims=[1]}\n"
            "  return (%5)\n"
            "}\n");
}

TEST(Recorder, TrainingStepIsOneRegionThatRepeats) {
  constexpr int kSteps = 6;
  // Other tests may have cached the initialization's region (sizes are generic): the counts
  // below are of a fresh cache.
  tracer::RegionCache::instance().clear();
  auto train = [&](std::vector<float>& losses) {
    manual_seed(3);
    Tensor w1 = (randn({16, 4}) * 0.3).requires_grad_();
    Tensor b1 = zeros({16}).requires_grad_();
    Tensor w2 = (randn({3, 16}) * 0.3).requires_grad_();
    Tensor x = randn({32, 4});
    Tensor target = randint(0, 3, {32});
    kiln::sync();
    optim::SGD opt({w1, b1, w2}, optim::SGDOptions(0.1));
    for (int step = 0; step < kSteps; ++step) {
      opt.zero_grad();
      Tensor loss = cross_entropy(linear(relu(linear(x, w1, b1)), w2), target);
      loss.backward();
      opt.step();
      losses.push_back(loss.item<float>());
    }
    return std::vector<Tensor>{w1.detach(), b1.detach(), w2.detach()};
  };
  std::vector<float> eager_losses, recorded_losses;
  std::vector<Tensor> eager_params, recorded_params;
  {
    JitMode mode(false);
    eager_params = train(eager_losses);
  }
  CacheDelta delta;
  {
    JitMode mode(true);
    recorded_params = train(recorded_losses);
  }
  EXPECT_EQ(recorded_losses, eager_losses);  // bitwise: same kernels, same order
  for (size_t i = 0; i < eager_params.size(); ++i)
    expect_bitwise_equal(recorded_params[i], eager_params[i], "parameter");
  // One region for the initialization, one for the training step, hit on every later step.
  tracer::CacheCounters c = delta.now();
  EXPECT_EQ(c.hits, kSteps - 1);
  EXPECT_EQ(c.misses, 2);
  const tracer::CachedRegion* step = tracer::RegionCache::instance().regions().back();
  EXPECT_EQ(step->runs.load(), kSteps);
  EXPECT_EQ(step->hits.load(), kSteps - 1);
}

TEST(Recorder, VaryingScalarIsPromotedNotRecompiled) {
  JitMode jit(true);
  Tensor x = ramp({5});
  kiln::sync();
  CacheDelta delta;
  for (int i = 0; i < 6; ++i) {
    const double lr = 0.1 / (i + 1);
    Tensor y = (x * lr + 1.0).exp();
    EXPECT_EQ(y.to_vector<float>(), ((x.detach() * lr + 1.0).exp()).to_vector<float>());
  }
  tracer::CacheCounters c = delta.now();
  // Each iteration flushes two regions (y, and the reference); y's region is made once, its
  // `lr` promoted on the second run, and hit from then on.
  EXPECT_EQ(c.promotions, 1);
  EXPECT_EQ(c.uncached, 0);
}

// A loop whose iterations flush the same program: from the second iteration on, the segment
// follows its last recording (tracer/flush_memo.h) instead of rebuilding and looking it up. A
// promoted scalar, dropout's Philox counter and an iteration that records something else must all
// still give eager's bits.
TEST(Recorder, RepeatedFlushFollowsTheLastRecording) {
  auto program = [](const Tensor& x, int i) {
    const double lr = 0.1 / (i + 1);
    Tensor h = dropout(x * lr + 1.0, 0.5, /*train=*/true);
    if (i == 3) h = h.exp();  // this iteration differs: following stops, then starts again
    return (h * h).sum();
  };
  Tensor x = ramp({64});
  std::vector<float> eager, recorded;
  {
    JitMode off(false);
    manual_seed(11);
    for (int i = 0; i < 8; ++i) eager.push_back(program(x, i).item<float>());
  }
  JitMode jit(true);
  kiln::sync();
  CacheDelta delta;
  manual_seed(11);
  for (int i = 0; i < 8; ++i) recorded.push_back(program(x, i).item<float>());
  EXPECT_EQ(recorded, eager);
  const tracer::CacheCounters c = delta.now();
  EXPECT_EQ(c.regions, 2);  // the loop body, and iteration 3's variant
  EXPECT_EQ(c.misses, 2);   // iterations 0 and 3
  EXPECT_EQ(c.hits, 6);
  EXPECT_EQ(c.promotions, 1);  // lr, at iteration 1
  // Iterations 2, 5, 6 and 7 repeat the recording before them; 4 repeats iteration 2's, which
  // the segment still remembers beside 3's (1 differs from 0 by the promoted scalar).
  EXPECT_EQ(c.repeats, 5);
}

// A loop that syncs more than once per iteration flushes different programs in turn: each is
// followed from its second time on (tracer/flush_memo.h keeps the last few), including one that
// shares its first nodes with another (the segment follows the predicted recording, meets the
// difference at node 2 and goes on with the other). The bits stay eager's.
TEST(Recorder, FlushesInTurnFollowTheirOwnRecordings) {
  // B and C begin alike (mul, exp) and differ at their third node.
  auto a = [](const Tensor& x) { return ((x + 3.0) * x).amax(); };
  auto b = [](const Tensor& x) { return (x * 2.0).exp().sum(); };
  auto c = [](const Tensor& x) { return ((x * 2.0).exp() - 1.0).sum(); };
  auto run = [&](const Tensor& x, int i) {
    const Tensor r = i % 2 == 0 ? a(x) : (i % 4 == 1 ? b(x) : c(x));
    return r.item<float>();
  };
  Tensor x = ramp({32}, -1.0, 0.0625);
  constexpr int kFlushes = 12;  // A B A C A B A C ...
  std::vector<float> eager, recorded;
  {
    JitMode off(false);
    for (int i = 0; i < kFlushes; ++i) eager.push_back(run(x, i));
  }
  JitMode jit(true);
  kiln::sync();
  CacheDelta delta;
  for (int i = 0; i < kFlushes; ++i) recorded.push_back(run(x, i));
  EXPECT_EQ(recorded, eager);
  const tracer::CacheCounters n = delta.now();
  EXPECT_EQ(n.regions, 3);
  EXPECT_EQ(n.misses, 3);  // the first A, B and C
  EXPECT_EQ(n.hits, kFlushes - 3);
  EXPECT_EQ(n.repeats, kFlushes - 3);  // every later flush, none looked up
}

// Four distinct flushes in turn are all remembered (FlushMemo::kEntries); a fifth program
// replaces the least recently run one, which is then looked up again when it comes back.
TEST(Recorder, TheLeastRecentlyRunFlushIsForgottenFirst) {
  static_assert(tracer::FlushMemo::kEntries == 4);
  auto program = [](const Tensor& x, int k) {
    Tensor y = x;
    for (int j = 0; j <= k; ++j) y = (y * 0.5).sin();  // k + 1 steps: distinct programs
    return y.sum().item<float>();
  };
  Tensor x = ramp({16});
  JitMode jit(true);
  kiln::sync();
  CacheDelta delta;
  for (int cycle = 0; cycle < 3; ++cycle)
    for (int k = 0; k < 4; ++k) program(x, k);
  tracer::CacheCounters n = delta.now();
  EXPECT_EQ(n.misses, 4);
  EXPECT_EQ(n.repeats, 8);  // cycles 1 and 2
  program(x, 0);            // run again: k = 1 is now the least recently run
  program(x, 4);            // a fifth: k = 1 is forgotten
  program(x, 0);            // still remembered
  program(x, 1);            // looked up again (a hit of the cache, not a repeat)
  n = delta.now();
  EXPECT_EQ(n.misses, 5);
  EXPECT_EQ(n.repeats, 10);
  EXPECT_EQ(n.hits, 11);
}

// A flush that ends where the recording followed goes on (a remembered longer one that begins
// alike) is the repeat of another remembered recording of exactly its nodes: it is run as
// such, not looked up and remembered a second time.
TEST(Recorder, AFlushEndingWhereALongerOneGoesOnRepeatsItsOwn) {
  auto a = [](const Tensor& x) { return (x + 5.0).amax(); };
  auto y = [](const Tensor& x) { return (x * 2.0).exp().sum(); };
  auto z = [&](const Tensor& x) { return y(x) * 3.0; };  // y's nodes, then one more
  Tensor x = ramp({16}, -1.0, 0.125);
  std::vector<float> eager, recorded;
  auto run = [&](std::vector<float>& out) {
    out.push_back(a(x).item<float>());
    for (int i = 0; i < 4; ++i) {
      out.push_back(y(x).item<float>());
      out.push_back(z(x).item<float>());
    }
  };
  {
    JitMode off(false);
    run(eager);
  }
  JitMode jit(true);
  kiln::sync();
  tracer::RegionCache::instance().clear();  // other tests cached y's region (sizes are generic)
  CacheDelta delta;
  run(recorded);
  EXPECT_EQ(recorded, eager);
  const tracer::CacheCounters n = delta.now();
  EXPECT_EQ(n.misses, 3);   // a, y and z once each
  EXPECT_EQ(n.repeats, 6);  // every later y and z (after y, z is predicted; after z, y follows
                            // the longer z to y's end)
}

// While a recording repeats a remembered one, the dispatcher takes each op's output metadata from
// the remembered node instead of running its meta function (Segment::known_meta). Only where the
// inputs are the same values with the same metadata and the attributes the same bits: a graph
// input of another shape, a scalar of other bits (0.0 then -0.0), a broadcast that no longer
// fits (an error, as eager raises it) all run the meta function, and every result is eager's.
TEST(Recorder, RepeatedOpsTakeTheirMetadataFromTheRememberedNodes) {
  // x's first reader is a full sum, whose output metadata is the same for x of [4, 8] and of
  // [8, 4]: the sum is followed either way, and x's later reader must see the difference.
  auto program = [](const Tensor& x, const Tensor& b, double c) {
    Tensor y = x * x.sum();
    for (int i = 0; i < 8; ++i) y = (y + b) * c;
    return y.sum({1}) * c;  // a sum of zeros is +0.0: the product keeps c's sign
  };
  struct Step {
    std::vector<int64_t> x, b;
    double c;
  };
  const std::vector<Step> steps = {{{4, 8}, {8}, 0.5}, {{4, 8}, {8}, 0.5},   {{4, 8}, {8}, 0.5},
                                   {{8, 4}, {4}, 0.5}, {{4, 16}, {16}, 0.5}, {{4, 16}, {16}, 0.5},
                                   {{4, 8}, {1}, 0.5}, {{4, 8}, {8}, 0.0},   {{4, 8}, {8}, -0.0},
                                   {{4, 8}, {8}, 0.5}};
  auto run = [&](const Step& s) {
    Tensor x = ramp(s.x, -1.0, 0.125), b = ramp(s.b, 0.25, 0.5);  // b > 0: c = -0.0 gives -0.0
    kiln::sync();  // x and b are graph inputs of the program's recording
    return program(x, b, s.c);
  };
  std::vector<Tensor> eager;
  {
    JitMode off(false);
    for (const Step& s : steps) eager.push_back(run(s));
  }
  JitMode jit(true);
  kiln::sync();
  const int64_t known_before = tracer::known_metas_this_thread();
  for (size_t i = 0; i < steps.size(); ++i) {
    Tensor got = run(steps[i]);
    ASSERT_EQ(got.sizes(), eager[i].sizes()) << "step " << i;
    expect_bitwise_equal(got, eager[i]);
  }
  // Steps 1, 2, 5 and 9 repeat the step before them whole: 19 ops each, of which the first
  // (x, a graph input not read yet) runs its meta function.
  EXPECT_GE(tracer::known_metas_this_thread() - known_before, 4 * 18);
  // A shape error is raised as eager raises it, also while following: b of [5] is read by a
  // sum (followed: its output is [] for any b), then x + b must not take the remembered [4, 8].
  auto reads_then_adds = [](const Tensor& x, const Tensor& b) {
    return (x.sum() + b.sum() + (x + b).sum()).item<float>();
  };
  Tensor x8 = ramp({4, 8}), b8 = ramp({8}), b5 = ramp({5});
  kiln::sync();
  for (int i = 0; i < 3; ++i) (void)reads_then_adds(x8, b8);
  EXPECT_THROW((void)reads_then_adds(x8, b5), Error);
}

// The region cache cleared while a segment already follows its last flush (between that
// flush and the next): the remembered region is gone, so the repeat must be looked up again
// (a miss that makes a new region), never run from the freed one.
TEST(Recorder, ClearingTheCacheWhileFollowingLooksUpAgain) {
  auto program = [](const Tensor& x) { return ((x * 2.0).exp() + 1.0).sum(); };
  Tensor x = ramp({16});
  float want = 0;
  {
    JitMode off(false);
    want = program(x).item<float>();
  }
  JitMode jit(true);
  kiln::sync();
  for (int i = 0; i < 2; ++i) EXPECT_EQ(program(x).item<float>(), want);  // remembered, followed
  tracer::RegionCache::instance().clear();  // the segment follows the freed region from here
  EXPECT_EQ(program(x).item<float>(), want);
  const tracer::CacheCounters c = tracer::RegionCache::instance().counters();
  EXPECT_EQ(c.regions, 1);
  EXPECT_EQ(c.misses, 1);
  EXPECT_EQ(c.hits, 0);
  EXPECT_EQ(tracer::RegionCache::instance().regions().size(), 1u);
}

// Inputs that share memory are part of a region's key (the aliasing of its arguments), for few
// inputs and for many (Segment::graph_args scans up to 32 and maps past that): a recording of
// 40 leaves where two are views of one buffer is another region than 40 separate buffers, and
// again where another pair shares one; each gives eager's result.
TEST(Recorder, InputsSharingMemoryKeyTheirRegionForManyInputs) {
  for (int64_t n : {6, 40}) {
    JitMode jit(true);
    tracer::RegionCache::instance().clear();
    std::vector<Tensor> leaves;
    Tensor shared;
    {
      JitMode off(false);
      for (int64_t i = 0; i < n; ++i) leaves.push_back(ramp({4}) + static_cast<double>(i));
      shared = ramp({8});
    }
    auto program = [&](const std::vector<Tensor>& in) {
      Tensor acc = in[0] * 1.0;
      for (size_t i = 1; i < in.size(); ++i) acc = acc + in[i] * static_cast<double>(i % 3 + 1);
      return acc;
    };
    auto eager = [&](const std::vector<Tensor>& in) {
      JitMode off(false);
      return program(in);
    };
    std::vector<Tensor> separate = leaves, aliased = leaves, other = leaves;
    aliased[1] = shared.slice(0, 0, 4);
    aliased[n - 2] = shared.slice(0, 4, 8);
    other[2] = shared.slice(0, 0, 4);
    other[n - 1] = shared.slice(0, 4, 8);
    for (const auto* in : {&separate, &separate, &aliased, &aliased, &other}) {
      const Tensor want = eager(*in);
      Tensor got = program(*in);
      kiln::sync();
      expect_bitwise_equal(got, want, n == 6 ? "6 inputs" : "40 inputs");
    }
    const tracer::CacheCounters c = tracer::RegionCache::instance().counters();
    EXPECT_EQ(c.misses, 3) << n << " inputs: separate, aliased (1, n-2), aliased (2, n-1)";
    EXPECT_EQ(c.hits, 2) << n << " inputs";
  }
}

// The interpreter writes an elementwise op's result into a dead input buffer (InterpreterPlan::
// donor); a buffer a live view still reaches, or a graph input, must never be reused.
TEST(Recorder, InterpreterReusesOnlyDeadBuffers) {
  auto program = [](const Tensor& a, const Tensor& b) {
    Tensor y = a + b;
    Tensor v = y.t();            // a live view of y: y's buffer must survive z
    Tensor z = (y * 2.0) + 1.0;  // y dies here, but v still reads its buffer
    Tensor w = (a - 1.0).exp();  // a is a graph input: never written
    return std::vector<Tensor>{v, z, w, a};
  };
  Tensor a = ramp({4, 3}), b = ramp({4, 3}, 1.0, -0.5);
  std::vector<Tensor> eager;
  {
    JitMode off(false);
    eager = program(a, b);
  }
  JitMode jit(true);
  for (int run = 0; run < 3; ++run) {  // first recording, lookup, then a followed repeat
    std::vector<Tensor> got = program(a, b);
    for (size_t i = 0; i < got.size(); ++i) expect_bitwise_equal(got[i], eager[i]);
  }
}

TEST(Recorder, RecompileLimitEndsInInterpretationWithOneWarning) {
  ConfigOverride limit(config().jit_recompile_limit, 2);
  TracerLog log;
  JitMode jit(true);
  tracer::RegionCache::instance().clear();
  Tensor base = ramp({6, 6});
  kiln::sync();
  const Tensor layouts[] = {base, base.t(), base.slice(1, 0, 6, 2).expand({6, 3}),
                            base.slice(0, 1, 4).t(), base};
  CacheDelta delta;
  for (const Tensor& in : layouts) {
    Tensor y = ((in * 2.0).exp() + 1.0).sum();
    EXPECT_EQ(y.item<float>(), ((in * 2.0).exp() + 1.0).sum().item<float>());
  }
  EXPECT_GT(delta.now().uncached, 0);
  const std::string text = log.text();
  EXPECT_NE(text.find("KILN_JIT_RECOMPILE_LIMIT"), std::string::npos) << text;
  EXPECT_NE(text.find("layout"), std::string::npos) << text;
  // One warning per region family, however often it comes back.
  EXPECT_EQ(text.find("KILN_JIT_RECOMPILE_LIMIT"), text.rfind("KILN_JIT_RECOMPILE_LIMIT")) << text;
}

// An index that changes every iteration (x.select(0, i)) is an attribute, not a scalar: each
// value is a variant of the same program family, so the recompile limit still ends it.
TEST(Recorder, VaryingViewIndexReachesTheRecompileLimit) {
  ConfigOverride limit(config().jit_recompile_limit, 3);
  TracerLog log;
  JitMode jit(true);
  tracer::RegionCache::instance().clear();
  Tensor x = ramp({8, 5});
  kiln::sync();
  CacheDelta delta;
  for (int64_t i = 0; i < 8; ++i) {
    const float got = ((x * 2.0).select(0, i) + 1.0).sum().item<float>();
    float want = 0;
    {
      JitMode off(false);
      want = ((x * 2.0).select(0, i) + 1.0).sum().item<float>();
    }
    EXPECT_EQ(got, want);
  }
  EXPECT_EQ(delta.now().regions, 3);
  EXPECT_EQ(delta.now().uncached, 5);
  const std::string text = log.text();
  EXPECT_NE(text.find("integer attribute"), std::string::npos) << text;
}

TEST(Recorder, KernelErrorsSurfaceAtTheSyncPoint) {
  JitMode jit(true);
  Tensor x = ramp({3, 4});
  Tensor good = x * 2.0;
  Tensor bad = gather(x, 1, from_vector<int64_t>({0, 9}, {1, 2}));  // no error yet
  EXPECT_THROW(
      {
        try {
          kiln::sync();
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("gather"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  // Values that did not depend on the failed op were computed; the failed one raises on read.
  EXPECT_EQ(good.to_vector<float>()[1], 1.5f);
  try {
    (void)bad.to_vector<float>();
    ADD_FAILURE() << "reading a failed value must raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("could not be computed"), std::string::npos) << e.what();
  }
}

TEST(Recorder, SegmentLimitAndModeSwitch) {
  ConfigOverride limit(config().jit_segment_limit, 8);
  Tensor y;
  {
    JitMode jit(true);
    y = ramp({4});
    for (int i = 0; i < 30; ++i) y = y + 1.0;
    EXPECT_LT(tracer::pending_ops_this_thread(), 8);
    // Switching recording off at run time: the next op flushes and runs eagerly.
    config().jit = false;
    Tensor z = y * 1.0;
    EXPECT_FALSE(z.impl()->storage()->is_lazy());
    EXPECT_EQ(tracer::pending_ops_this_thread(), 0);
  }
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{30.5f, 30.75f, 31.0f, 31.25f}));
}

TEST(Recorder, DumpWritesEveryNewRegion) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("kiln-record-dump-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ConfigOverride dump(config().dump, dir.string());
  {
    JitMode jit(true);
    tracer::RegionCache::instance().clear();
    Tensor x = ramp({4});
    kiln::sync();
    (void)(x * 3.0 - 1.0).sum().item<float>();
  }
  tracer::wait_for_compiles();  // background planning writes kernel dumps there too
  int txt = 0;
  for (const auto& e : fs::directory_iterator(dir))
    txt += e.path().extension() == ".txt" && e.path().filename().string().starts_with("region-");
  EXPECT_GE(txt, 1);
  fs::remove_all(dir);
}

// A planner that "plans" by interpreting its own copy of the first recording, and counts what it
// is asked to do. Its plans read only RunArgs (backend.h): sizes from the inputs, so a plan made
// from one recording serves recordings of other batch sizes without planning again.
class CountingBackend final : public tracer::RegionPlanner {
 public:
  std::atomic<int> compiles{0}, runs{0};
  std::atomic<bool> fail{false};  // set by the test while background planning reads it
  const char* name() const override { return "counting"; }
  int threshold(const tracer::Graph&) const override { return 2; }
  std::unique_ptr<tracer::RegionPlan> plan(const tracer::Graph& g,
                                           const tracer::RuntimeScalars& runtime) override {
    ++compiles;
    if (fail) throw Error("counting backend: refusing to compile");
    return std::make_unique<Plan>(*this, g, runtime);
  }

 private:
  struct Plan final : tracer::RegionPlan {
    Plan(CountingBackend& b, const tracer::Graph& g, tracer::RuntimeScalars r)
        : backend(b), graph(g), runtime(std::move(r)) {}
    tracer::InterpretResult run(const tracer::RunArgs& args) override {
      ++backend.runs;
      // Promoted scalars come from the run arguments; every node's meta is re-derived from the
      // actual inputs (only ops without shape attributes in these tests).
      tracer::Graph current = graph;
      for (size_t k = 0; k < runtime.size(); ++k)
        current.nodes[runtime[k].node].attrs.scalars[runtime[k].index] = args.scalars[k];
      for (size_t i = 0; i < args.inputs.size(); ++i)
        current.inputs[i].meta = tracer::meta_of(args.inputs[i].impl());
      std::vector<tracer::ValueMeta> metas(static_cast<size_t>(current.num_values()));
      for (const auto& in : current.inputs) metas[in.id] = in.meta;
      for (auto& n : current.nodes) {
        std::vector<Tensor> probes;
        for (tracer::ValueId v : n.inputs)
          probes.push_back(empty_strided(metas[v].sizes, metas[v].dtype));
        kiln::OutputMeta m;
        op_def(n.op).meta(OpCall{n.op, probes, n.attrs}, m);
        n.meta = m;
        metas[n.output] = m;
      }
      return tracer::interpret(current, tracer::plan_interpreter(current), args.inputs,
                               args.destinations);
    }
    static Tensor empty_strided(const DimVector& sizes, DType d) {
      return empty_tensor(sizes, d, Device::cpu());
    }
    CountingBackend& backend;
    tracer::Graph graph;
    tracer::RuntimeScalars runtime;
  };
};

void run_with_backend(CountingBackend& backend, bool async, int iterations) {
  ConfigOverride threshold(config().jit_threshold, 2);
  ConfigOverride asynchronous(config().jit_async, async);
  kiln::testing::PlannerOverride planner(&backend);
  JitMode jit(true);
  tracer::RegionCache::instance().clear();
  Tensor x = ramp({6});
  kiln::sync();
  for (int i = 0; i < iterations; ++i) {
    Tensor y = (x * 2.0 + 1.0).tanh();
    EXPECT_EQ(bytes_of(y), bytes_of((x.detach() * 2.0 + 1.0).tanh()));
    if (async) tracer::wait_for_compiles();
  }
}

TEST(Recorder, BackendCompilesHotRegionsAndRunsTheirPlans) {
  for (bool async : {false, true}) {
    CountingBackend backend;
    run_with_backend(backend, async, 5);
    EXPECT_EQ(backend.compiles.load(), 1) << "async=" << async;
    EXPECT_GE(backend.runs.load(), 2) << "async=" << async;
  }
}

TEST(Recorder, BackendFailureFallsBackToInterpretation) {
  CountingBackend backend;
  backend.fail = true;
  run_with_backend(backend, false, 5);    // results are checked inside
  EXPECT_EQ(backend.compiles.load(), 1);  // tried once, never again
  EXPECT_EQ(backend.runs.load(), 0);
}

// The seam is size-generic: a plan made from the first recording runs a recording of another
// batch size (same region: sizes are not in the key) without planning again, and its results
// are those of eager mode.
TEST(Recorder, PlanFromOneRecordingRunsAnotherBatchSize) {
  CountingBackend backend;
  ConfigOverride threshold(config().jit_threshold, 1);
  ConfigOverride synchronous(config().jit_async, false);
  kiln::testing::PlannerOverride planner(&backend);
  JitMode jit(true);
  tracer::RegionCache::instance().clear();
  for (int64_t batch : {4, 4, 9, 17}) {
    Tensor x, want;
    {
      JitMode off(false);
      x = ramp({batch, 3});
      want = (x * 2.0 + 1.0).tanh();
    }
    Tensor y = (x * 2.0 + 1.0).tanh();
    EXPECT_EQ(bytes_of(y), bytes_of(want)) << "batch " << batch;
  }
  EXPECT_EQ(backend.compiles.load(), 1);  // planned after the first run, never again
  EXPECT_EQ(backend.runs.load(), 3);      // batches 4, 9 and 17 ran the plan
}

// A threshold of 0 plans a region before its first run: synchronously, every run (the first
// included) is the plan's; in the background, planning starts at the first run, which is
// interpreted meanwhile. Either way the results are eager's and the region is planned once.
TEST(Recorder, ThresholdZeroPlansBeforeTheFirstRun) {
  for (bool async : {false, true}) {
    CountingBackend backend;
    ConfigOverride threshold(config().jit_threshold, 0);
    ConfigOverride asynchronous(config().jit_async, async);
    kiln::testing::PlannerOverride planner(&backend);
    JitMode jit(true);
    tracer::RegionCache::instance().clear();
    Tensor x;
    {
      JitMode off(false);
      x = ramp({7});
    }
    for (int i = 0; i < 3; ++i) {
      Tensor y = (x * 2.0 + 1.0).tanh();
      EXPECT_EQ(bytes_of(y), bytes_of((x.detach() * 2.0 + 1.0).tanh())) << "async=" << async;
      if (i == 0 && !async) {
        EXPECT_EQ(backend.compiles.load(), 1);
        EXPECT_EQ(backend.runs.load(), 1) << "the first run is the plan's";
      }
      if (async) tracer::wait_for_compiles();  // then the 2nd and 3rd runs are the plan's
    }
    EXPECT_EQ(backend.compiles.load(), 1) << "async=" << async;
    EXPECT_GE(backend.runs.load(), async ? 2 : 3) << "async=" << async;
    EXPECT_LE(backend.runs.load(), 3) << "async=" << async;
  }
}

// Planning in the background while other threads record, the cache is cleared under the queued
// jobs and scalars are promoted: no job may touch a freed region (ASan), a failure must not
// overwrite the reset state of a concurrent promotion, and every result stays eager's.
TEST(Recorder, BackgroundPlanningSurvivesCacheClearsAndPromotions) {
  CountingBackend backend;
  ConfigOverride threshold(config().jit_threshold, 1);
  ConfigOverride asynchronous(config().jit_async, true);
  // The workers' JitMode scopes save and restore the eager tier's switch concurrently (it is
  // global): restore it here, or later tests would inherit whichever value came last.
  ConfigOverride tier(config().jit_eager_tier, static_cast<bool>(config().jit_eager_tier));
  kiln::testing::PlannerOverride planner(&backend);
  std::atomic<bool> stop{false};
  std::atomic<int> mismatches{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&, t] {
      Tensor x;
      {
        JitMode off(false);
        x = ramp({5 + t});
      }
      JitMode jit(true);
      for (int i = 0; i < 200 && !stop; ++i) {
        const double scale = 1.0 + (i % 7);  // varies: promoted to a runtime scalar
        Tensor y = (x * scale - 0.5).tanh();
        Tensor want;
        {
          JitMode off(false);
          want = (x * scale - 0.5).tanh();
        }
        if (bytes_of(y) != bytes_of(want)) ++mismatches;
      }
    });
  }
  for (int i = 0; i < 50; ++i) {
    backend.fail = (i % 3) == 0;
    tracer::RegionCache::instance().clear();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  stop = true;
  for (auto& w : workers) w.join();
  tracer::wait_for_compiles();
  tracer::RegionCache::instance().clear();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace

// A plan compiled in the background for the scalars baked in when it was queued must not be
// installed once one of them was promoted meanwhile (it would run with the stale value).
TEST(Recorder, PlanCompiledBeforeAPromotionIsNotInstalled) {
  tracer::Graph g;
  const tracer::ValueId in = g.add_input({4}, DType::Float32);
  Attrs mul;
  mul.scalars[0] = 2.0;
  tracer::ValueMeta m;
  m.sizes = {4};
  const tracer::ValueId out = g.add_node(OpId::Mul, mul, {in}, m);
  g.set_outputs({out});
  tracer::CachedRegion region(1, g, {}, {}, nullptr);
  CountingBackend backend;
  const tracer::RuntimeScalars queued = region.runtime_scalars();
  region.add_runtime_scalars({{0, 0}});  // promoted while the compile ran
  EXPECT_FALSE(region.install_plan(backend.plan(g, queued), queued));
  EXPECT_EQ(region.jit_plan(), nullptr);
  EXPECT_NE(region.plan_state.load(), tracer::CachedRegion::PlanState::Ready);
  const tracer::RuntimeScalars now = region.runtime_scalars();
  EXPECT_TRUE(region.install_plan(backend.plan(g, now), now));
  EXPECT_NE(region.jit_plan(), nullptr);
}
