// Random-program fuzzer for the traced higher-order ops (docs/control_flow.md): each seed makes a
// program (tests/fuzz/hop_program.h) of cond, scan, map, while_loop, region and checkpoint calls
// whose bodies are random pointwise and reduction ops (nested up to depth 2), between plain
// steps and reads. It runs eagerly and recorded, twice (the second recording hits the region
// cache and the regions' trace caches), and every read, error and final tensor must be bitwise
// equal. A few bodies call a random op, read data or need gradients: those fall back by design
// and are compared too. Most programs must really trace: their flushed graphs hold hop nodes.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "fuzz/hop_execute.h"
#include "fuzz/seeds.h"
#include "hop_traced_util.h"
#include "runtime/autograd/grad_mode.h"
#include "tracer/body_tracer.h"
#include "tracer/hop/traced.h"

namespace kiln {
namespace {

using namespace kiln::fuzz;
using kiln::testing::JitMode;
using kiln::testing::JitRestore;

constexpr uint64_t kHopSeeds = 500;

// Top-level hop nodes in the regions flushed since the cache was cleared.
size_t flushed_hop_nodes() {
  size_t n = 0;
  for (OpId op : {OpId::Cond, OpId::WhileLoop, OpId::Scan, OpId::Map, OpId::Call})
    n += kiln::testing::flushed_nodes_of(op).size();
  return n;
}

// The fallbacks the generator provokes on purpose (random ops, reads, gradients in bodies).
size_t deliberate_fallbacks() {
  size_t n = 0;
  for (const char* op : {"cond", "while_loop", "scan", "map", "region", "checkpoint"})
    for (const std::string& reason :
         {std::string("it calls a random op (a traced body's draws would differ from eager "
                      "mode's)"),
          std::string("it reaches a sync point (item)"), std::string(tracer::kNeedsGradients)})
      n += hop::fallback_count(std::string(op) + ": " + reason);
  return n;
}

void expect_same_hop(const HopProgram& p, const Outcome& eager, const Outcome& lazy,
                     const char* what) {
  const std::string diff = first_difference(eager, lazy);
  if (diff.empty()) return;
  ADD_FAILURE() << what << ": eager and recorded runs differ\n  " << diff << "\nprogram ("
                << hop_listing(p, eager) << ")";
}

TEST(RecordFuzzHop, RandomHopProgramsMatchEagerBitwise) {
  const fuzz::SeedRange seeds = fuzz::fuzz_seeds(kHopSeeds, config().jit);
  JitRestore restore;
  kiln::sync();
  const size_t fallbacks0 = deliberate_fallbacks();
  int failures = 0, with_calls = 0, traced = 0;
  int64_t calls = 0, nodes = 0, reads = 0, errors = 0;
  for (uint64_t seed = seeds.first; seed < seeds.end() && failures < 3; ++seed) {
    const HopProgram p = make_hop_program(seed);
    HopRun eager, lazy, again;
    {
      JitMode off(false);
      eager = execute_hop(p);
    }
    tracer::RegionCache::instance().clear();
    {
      JitMode on(true);
      lazy = execute_hop(p);
    }
    const size_t program_nodes = flushed_hop_nodes();
    {
      JitMode on(true);
      again = execute_hop(p);
    }
    const bool differ = !first_difference(eager.outcome, lazy.outcome).empty() ||
                        !first_difference(eager.outcome, again.outcome).empty();
    expect_same_hop(p, eager.outcome, lazy.outcome, "first recording");
    expect_same_hop(p, eager.outcome, again.outcome, "second recording (cache hits)");
    failures += differ ? 1 : 0;
    EXPECT_EQ(eager.hop_calls, lazy.hop_calls) << "seed " << seed;
    calls += eager.hop_calls;
    nodes += static_cast<int64_t>(program_nodes);
    if (eager.hop_calls > 0) ++with_calls;
    if (eager.hop_calls > 0 && program_nodes > 0) ++traced;
    for (const std::string& l : eager.outcome.log)
      (l.find("error") != std::string::npos ? errors : reads)++;
  }
  const size_t fallbacks = deliberate_fallbacks() - fallbacks0;
  // Most programs recorded hop nodes (did not all fall back), the deliberate fallbacks happened,
  // and the programs read values and mostly ran without errors.
  EXPECT_GT(traced, with_calls * 9 / 10);
  EXPECT_GT(nodes, calls / 2);
  EXPECT_GT(fallbacks, 0u);
  EXPECT_GT(reads, static_cast<int64_t>(seeds.count));
  EXPECT_LT(errors, calls / 4);
  std::printf(
      "[fuzz-hop] %llu programs, %lld hop calls, %lld hop nodes flushed, %d/%d programs traced, "
      "%zu deliberate fallbacks, %lld reads, %lld errors compared\n",
      static_cast<unsigned long long>(seeds.count), static_cast<long long>(calls),
      static_cast<long long>(nodes), traced, with_calls, fallbacks, static_cast<long long>(reads),
      static_cast<long long>(errors));
}

// Found by the fuzzer (make_hop_program seeds 21, 42, 294, ...): a body result that is an expanded
// view with stride 0 in a size-1 dim counts as contiguous (TensorImpl::is_contiguous ignores
// size-1 dims); the body tracer compares strides exactly now, so it falls back and keeps eager's
// strides [0, 1].
TEST(RecordFuzzHop, BodyResultExpandedInASize1DimKeepsEagerStrides) {
  NoGradGuard no_grad;
  auto program = [] {
    Tensor x = kiln::testing::ramp({3});
    return checkpoint(
        [](const TensorList& a) {
          return TensorList{(a[0] * 2.0).expand({1, 3})};
        },
        {x});
  };
  const TensorList eager = kiln::testing::run_eagerly(program);
  const TensorList recorded = kiln::testing::run_recorded(program);
  kiln::testing::expect_lists_bitwise_equal(recorded, eager, "values");
  EXPECT_EQ(recorded[0].strides(), eager[0].strides());
}

// Found while minimizing the above: a body that returns a view of its argument (unsqueeze) shares
// the argument's memory eagerly, so a later in-place write to the argument shows in the result;
// the body tracer makes such a body fall back.
TEST(RecordFuzzHop, BodyResultViewOfArgumentAliasesAsEagerly) {
  NoGradGuard no_grad;
  auto program = [] {
    Tensor x = kiln::testing::ramp({3});
    Tensor y =
        checkpoint([](const TensorList& a) { return TensorList{a[0].unsqueeze(0)}; }, {x})[0];
    x.add_(1.0);
    return TensorList{y};
  };
  const TensorList eager = kiln::testing::run_eagerly(program);
  const TensorList recorded = kiln::testing::run_recorded(program);
  kiln::testing::expect_lists_bitwise_equal(recorded, eager, "values");
}

}  // namespace
}  // namespace kiln
