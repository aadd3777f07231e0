// Gathered row reductions run per block of rows (jit/plan/gathered_step.h): a reduction over
// {0, 2, 3} of [N, C, H, W] gathers g = copy(permute(x)) and reduces g's rows; where g is large
// and dies at its row kernel, each thread gathers a block of g's leading dim into a buffer of
// its own and reduces it there. Bitwise eager's on every ISA path and thread count, for a leaf
// (eager's copy per block) and a computed input (the gathering kernel per block), with a
// partial last block; the kernel launches per run tell blocked runs from whole ones. The
// pointwise steps after the row kernel (batch norm's output) run per block too where they can.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "jit/cpu/cpu_target.h"
#include "jit/plan/gathered_step.h"
#include "jit_kernel_util.h"
#include "jit_recorded_util.h"
#include "ops/cpu/reduce_plan.h"
#include "runtime/config.h"

namespace kiln {
namespace {

using testing::ConfigOverride;
using testing::JitMode;

using JitGatheredBlocksTest = testing::JitRecordedTest<>;

using Program = std::function<TensorList(const TensorList&)>;

// Runs `program` on `in` eagerly, then twice with the JIT (bitwise equal each time); returns
// the kernel launches of the second JIT run (the plan exists by then).
int64_t launches_of_checked_run(const Program& program, const TensorList& in,
                                const std::string& what) {
  TensorList want;
  {
    JitMode off(false);
    want = program(in);
  }
  int64_t launches = 0;
  for (int it = 0; it < 2; ++it) {
    const int64_t before = jit::cpu_jit_counters().launches.load();
    JitMode on(true);
    const TensorList got = program(in);
    kiln::sync();
    launches = jit::cpu_jit_counters().launches.load() - before;
    testing::expect_lists_bitwise_equal(got, want, what);
  }
  return launches;
}

// The blocks a run of g of this leading dim and slab bytes makes (1: run whole), as
// JitPlan::run_gathered picks them.
int64_t expected_blocks(int64_t leading, int64_t slab_bytes) {
  const int64_t total = leading * slab_bytes;
  if (total < int64_t{config().gather_block_min_kib} * 1024 || slab_bytes > kRowBlockMaxSlabBytes)
    return 1;
  const int64_t threads = std::max(2, num_threads());
  const int64_t per_block =
      std::max<int64_t>(1, std::min(kRowBlockBytes / slab_bytes, leading / threads));
  const int64_t blocks = (leading + per_block - 1) / per_block;
  return blocks < threads ? 1 : blocks;
}

// Calls check(what, dtype) on every ISA path, for Float32 and Float64, at 1 and 2 threads, each
// with an empty region cache.
void on_every_path(const std::function<void(const std::string&, DType)>& check) {
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (DType dt : {kFloat32, kFloat64}) {
      for (int threads : {1, 2}) {
        ConfigOverride<int> t(config().num_threads, threads);
        tracer::RegionCache::instance().clear();
        check(fmt::format("{} {} {} threads", isa, dtype_name(dt), threads), dt);
      }
    }
  }
}

// Batch-norm statistics of a leaf: eager's copy per block, then the row kernel (mean and both
// variances in one) over the block. [2, 45, 110, 110] Float32: slabs of 96.8 KB, two per block,
// the last block one channel; Float64: one channel per block. A smaller batch of the same plan
// (under the size at which blocking pays, KILN_GATHER_BLOCK_MIN_KIB) runs whole.
TEST_F(JitGatheredBlocksTest, LeafStatisticsRunPerBlockBitwise) {
  const Program stats = [](const TensorList& in) {
    return TensorList{in[0].mean({0, 2, 3}, true), in[0].var({0, 2, 3}, false, true),
                      in[0].var({0, 2, 3})};
  };
  on_every_path([&](const std::string& what, DType dt) {
    const int64_t hw = 110 * 110, es = static_cast<int64_t>(itemsize(dt));
    const Tensor big = testing::eager_normal({2, 45, 110, 110}, 3, dt) * 2.0 + 0.5;
    EXPECT_EQ(launches_of_checked_run(stats, {big}, what), expected_blocks(45, 2 * hw * es))
        << what;
    EXPECT_GT(expected_blocks(45, 2 * hw * es), 20) << what;
    const Tensor small = testing::eager_normal({3, 45, 11, 13}, 4, dt);
    EXPECT_EQ(launches_of_checked_run(stats, {small}, what + ", small"),
              expected_blocks(45, 3 * 11 * 13 * es))
        << what;
    EXPECT_EQ(tracer::RegionCache::instance().regions().size(), 1u) << what;
  });
}

// The statistics of a computed input (a scale and shift): the gathering kernel computes the
// producers at the gathered indices per block into the thread's buffer; two launches per block.
// With a sum of another input's gathered copy in the same row kernel (read whole, at the
// block's rows) and an amax beside it.
TEST_F(JitGatheredBlocksTest, ComputedInputsGatherPerBlockBitwise) {
  const Program stats = [](const TensorList& in) {
    const Tensor y = in[0] * in[1] + 1.0;
    return TensorList{y.mean({0, 2, 3}, true), y.var({0, 2, 3}, false, true), y.amax({0, 2, 3})};
  };
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    tracer::RegionCache::instance().clear();
    const Tensor x = testing::eager_normal({3, 41, 96, 96}, 5);
    const Tensor w = testing::eager_normal({1, 41, 1, 1}, 6);
    const int64_t blocks = expected_blocks(41, 3 * 96 * 96 * 4);
    EXPECT_GT(blocks, 1) << isa;
    EXPECT_EQ(launches_of_checked_run(stats, {x, w}, isa), 2 * blocks) << isa;
  }
  // Two inputs gathered over the same dims, reduced in one row kernel: the one gathered right
  // before it per block, the other read whole at each block's rows.
  const Program two = [](const TensorList& in) {
    return TensorList{(in[0] * 3.0).sum({0, 2}), in[1].amax({0, 2}, true),
                      (in[1] * 0.5).sum({0, 2})};
  };
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    tracer::RegionCache::instance().clear();
    const Tensor a = testing::eager_normal({64, 41, 500}, 7);
    const Tensor b = testing::eager_normal({64, 41, 500}, 8);
    launches_of_checked_run(two, {a, b}, isa + ", two inputs");
  }
}

// Kept dims after the leading one (x [N, C, H, W] over {0, 2}: g is [C, W, N, H], rows of
// (c, w), blocks of c): a block holds rows_per_index rows per leading index. Blocking forced
// (KILN_GATHER_BLOCK_MIN_KIB 0) on small tensors, a leaf (eager's gather per block) and a
// computed input (the gathering kernel), every ISA.
TEST_F(JitGatheredBlocksTest, SeveralKeptDimsGatherWholeRowsPerBlock) {
  ConfigOverride<int> min_kib(config().gather_block_min_kib, 0);
  ConfigOverride<int> threads(config().num_threads, 2);  // 9 channels: a block per thread
  const Program leaf = [](const TensorList& in) {
    return TensorList{in[0].mean({0, 2}), in[0].var({0, 2}, false, true)};
  };
  const Program computed = [](const TensorList& in) {
    const Tensor y = in[0] * 2.0 - 1.0;
    return TensorList{y.sum({0, 2}, true), y.amax({0, 2})};
  };
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    const Tensor x = testing::eager_normal({6, 9, 20, 5}, 10);
    const int64_t blocks = expected_blocks(9, 5 * 6 * 20 * 4);
    EXPECT_GT(blocks, 1) << isa;
    tracer::RegionCache::instance().clear();
    EXPECT_EQ(launches_of_checked_run(leaf, {x}, isa + ", leaf"), blocks) << isa;
    tracer::RegionCache::instance().clear();
    EXPECT_EQ(launches_of_checked_run(computed, {x}, isa + ", computed"), 2 * blocks) << isa;
  }
}

// A slab larger than kRowBlockMaxSlabBytes (few channels of a large batch) gains nothing
// from blocking: the pair runs whole, once.
TEST_F(JitGatheredBlocksTest, SlabsPastTheBlockSizeRunWhole) {
  const Program stats = [](const TensorList& in) {
    return TensorList{in[0].mean({0, 2, 3}), in[0].var({0, 2, 3})};
  };
  const Tensor x = testing::eager_normal({40, 3, 128, 128}, 9);  // slabs of 2.6 MB
  EXPECT_EQ(expected_blocks(3, 40 * 128 * 128 * 4), 1);
  EXPECT_EQ(launches_of_checked_run(stats, {x}, "large slabs"), 1);
}

// Batch norm's forward: after the statistics' row kernel, sqrt(var + eps) (a kernel over the
// channels) and the output y = (x - mean) / s * w + b run per block too, y's block read from
// the block's buffer (x's rows gathered there) and streamed out: three launches per block.
// Bitwise eager's on every ISA path, Float32 and Float64, 1 and 2 threads.
TEST_F(JitGatheredBlocksTest, BatchNormOutputRunsInTheBlocksBitwise) {
  const Program norm = [](const TensorList& in) {
    const Tensor mu = in[0].mean({0, 2, 3}, true);
    const Tensor var = in[0].var({0, 2, 3}, false, true);
    return TensorList{(in[0] - mu) / sqrt(var + 1e-5) * in[1] + in[2], mu, var};
  };
  on_every_path([&](const std::string& what, DType dt) {
    const Tensor x = testing::eager_normal({2, 45, 110, 110}, 11, dt) * 2.0 + 0.5;
    const Tensor w = testing::eager_normal({1, 45, 1, 1}, 12, dt);
    const Tensor b = testing::eager_normal({1, 45, 1, 1}, 13, dt);
    const int64_t blocks = expected_blocks(45, 2 * 110 * 110 * static_cast<int64_t>(itemsize(dt)));
    EXPECT_GT(blocks, 1) << what;
    EXPECT_EQ(launches_of_checked_run(norm, {x, w, b}, what), 3 * blocks) << what;
  });
}

// A whole output of several MiB made per block streams (non-temporal stores) as the whole launch
// would: the store choice looks at the whole launch's size (LaunchArgs::whole_elements). Under
// KILN_JIT_STREAMING=auto the launches per block are never timed (a block's ordinary stores land
// in the cache and would look faster than they are): every one streams; off: none.
TEST_F(JitGatheredBlocksTest, BlockedOutputsStreamLikeTheWhole) {
  const Program norm = [](const TensorList& in) {  // a kernel of its own: no earlier choice
    const Tensor mu = in[0].mean({0, 2, 3}, true);
    return TensorList{(in[0] - mu) * 1.375 - 0.625, in[0].var({0, 2, 3})};
  };
  const Tensor x = testing::eager_normal({4, 64, 96, 96}, 14);  // 9.4 MB
  const int64_t blocks = expected_blocks(64, 4 * 96 * 96 * 4);
  for (const std::string mode : {"on", "auto", "off"}) {
    ConfigOverride<std::string> stores(config().jit_streaming, mode);
    tracer::RegionCache::instance().clear();
    const int64_t before = jit::cpu_jit_counters().streaming_launches.load();
    EXPECT_EQ(launches_of_checked_run(norm, {x}, "streamed " + mode), 2 * blocks) << mode;
    EXPECT_EQ(jit::cpu_jit_counters().streaming_launches.load() - before,
              mode == "off" ? 0 : 2 * blocks)
        << mode;
  }
}

// Where the steps after the row kernel cannot run per block they run whole after the blocks,
// with the same bits (a lone mean is an eager step: each program has a variance beside it): an
// output written over x itself (later blocks still gather x), a read of x that is not its gathered
// elements (a narrowed x: read from x, whole), the statistics of several kept dims (a row value is
// not one per leading index). x read transposed is still its gathered elements (the buffer read
// along other strides): per block.
TEST_F(JitGatheredBlocksTest, StepsTheBlocksCannotRunRunWhole) {
  ConfigOverride<int> min_kib(config().gather_block_min_kib, 0);
  ConfigOverride<int> threads(config().num_threads, 2);  // 9 channels: a block per thread
  const Tensor x = testing::eager_normal({6, 9, 20, 20}, 15);
  const int64_t blocks = expected_blocks(9, 6 * 20 * 20 * 4);
  EXPECT_GT(blocks, 1);
  // In place: x -= mean (the result's destination is x's memory).
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    tracer::RegionCache::instance().clear();
    const auto center = [](Tensor& y) {
      const Tensor var = y.var({0, 2, 3});
      y.sub_(y.mean({0, 2, 3}, true));
      return var;
    };
    Tensor want = x.clone(), want_var;
    {
      JitMode off(false);
      want_var = center(want);
    }
    for (int it = 0; it < 2; ++it) {
      Tensor got = x.clone(), got_var;
      const int64_t before = jit::cpu_jit_counters().launches.load();
      {
        JitMode on(true);
        got_var = center(got);
        kiln::sync();
      }
      if (it == 1) {
        EXPECT_EQ(jit::cpu_jit_counters().launches.load() - before, blocks + 1) << isa;
      }
      testing::expect_lists_bitwise_equal({got, got_var}, {want, want_var}, isa + ", in place");
    }
  }
  const Program narrowed = [](const TensorList& in) {
    const Tensor mu = in[0].mean({0, 2, 3}, true);
    return TensorList{in[0].narrow(3, 0, 10) - mu, in[0].var({0, 2, 3})};
  };
  const Program transposed = [](const TensorList& in) {
    const Tensor mu = in[0].mean({0, 2, 3}, true);
    return TensorList{in[0].transpose(2, 3) * 2.0 - mu, in[0].var({0, 2, 3})};
  };
  const Program kept = [](const TensorList& in) {
    const Tensor mu = in[0].mean({0, 2}, true);
    return TensorList{in[0] - mu, in[0].var({0, 2})};
  };
  for (const std::string& isa : testing::supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    tracer::RegionCache::instance().clear();
    EXPECT_EQ(launches_of_checked_run(narrowed, {x}, isa + ", narrowed"), blocks + 1) << isa;
    tracer::RegionCache::instance().clear();
    EXPECT_EQ(launches_of_checked_run(transposed, {x}, isa + ", transposed"), 2 * blocks) << isa;
    tracer::RegionCache::instance().clear();
    const int64_t kept_blocks = expected_blocks(9, 20 * 6 * 20 * 4);
    EXPECT_EQ(launches_of_checked_run(kept, {x}, isa + ", kept"), kept_blocks + 1) << isa;
  }
}

}  // namespace
}  // namespace kiln
