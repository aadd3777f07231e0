// A differential fuzzer of the JIT: random pointwise programs (chains and DAGs of unary ops (sin
// and cos among them: the exact reduction's call for huge lanes), binary,
// clamp, pow, maximum/minimum, comparisons with where, scalars on either side, broadcasting,
// transposed, strided and offset views as inputs, in-place updates of leaves and of views of
// leaves, Float32 and Float64, rand/randn, dropout (fused), a sum now and then; and every dtype:
// Bool, Int32 and Int64 inputs, casts between all five dtypes (NaN, infinities and out-of-range
// floats to integers included), implicit promotions of mixed operands, comparisons stored as Bool
// tensors, where / masked_fill on loaded Bool masks, logical ops, floor / ceil / round, integer
// arithmetic that overflows) run eagerly and recorded, bitwise
// equal with NaN canonicalized, on every ISA path in turn. Each program runs three iterations:
// interpreted then planned, then with its changing scalars promoted (planned again), then from
// the plan. Seeds are fixed; KILN_FUZZ_SEEDS (how many programs) and KILN_FUZZ_OFFSET (the first
// seed) override them.
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/plan/jit_plan.h"
#include "jit_fuzz_program.h"
#include "jit_kernel_util.h"
#include "ops/meta_helpers.h"
#include "record_util.h"
#include "suite_passes.h"
#include "tracer/region_cache.h"
#include "tracer/region_runner.h"

namespace kiln {
namespace {

using testing::bytes_of;
using testing::ConfigOverride;
using testing::JitMode;
using testing::JitRestore;

using namespace jit_fuzz;

// An input: values with special ones mixed in, in the requested form (made eagerly).
Tensor make_input(const Program& p, const Input& in) {
  JitMode off(false);
  std::mt19937_64 rng(in.seed);
  Shape storage = in.shape;
  if (in.form == 1 && storage.size() >= 2)
    std::swap(storage[storage.size() - 1], storage[storage.size() - 2]);
  if (in.form == 2 && !storage.empty()) storage[0] = storage[0] * 2 + 1;
  int64_t n = 1;
  for (int64_t s : storage) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  std::normal_distribution<double> nd;
  const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, -1e-40, 1e38, 1.0, -1.0};
  for (double& x : v) x = rng() % 10 == 0 ? specials[rng() % 10] : nd(rng) * (rng() % 4 ? 1 : 100);
  (void)p;
  Tensor t = from_vector<double>(v, IntList(storage)).to(in.dtype);
  if (in.form == 1 && storage.size() >= 2) t = t.transpose(-1, -2);
  if (in.form == 2 && !storage.empty()) t = t.slice(0, 1, storage[0], 2);
  return t;
}

Tensor unary(int op, const Tensor& x) {
  switch (op) {
    case 0:
      return -x;
    case 1:
      return x.abs();
    case 2:
      return x.sqrt();
    case 3:
      return x.rsqrt();
    case 4:
      return x.reciprocal();
    case 5:
      return x.square();
    case 6:
      return x.relu();
    case 7:
      return x.sign();
    case 8:
      return x.tanh();
    case 9:
      return x.sigmoid();
    case 10:
      return x.exp();
    case 12:
      return x.sin();
    case 13:
      return x.cos();
    default:
      return x.neg().abs();
  }
}

Tensor binary(int op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case 0:
      return a + b;
    case 1:
      return a - b;
    case 2:
      return a * b;
    case 3:
      return a / b;
    case 4:
      return maximum(a, b);
    default:
      return minimum(a, b);
  }
}

Tensor compare(int op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case 0:
      return a < b;
    case 1:
      return a <= b;
    case 2:
      return a > b;
    case 3:
      return a >= b;
    case 4:
      return a == b;
    default:
      return a != b;
  }
}

Tensor compare(int op, const Tensor& a, const Scalar& b) {
  switch (op) {
    case 0:
      return lt(a, b);
    case 1:
      return le(a, b);
    case 2:
      return gt(a, b);
    case 3:
      return ge(a, b);
    case 4:
      return eq(a, b);
    default:
      return ne(a, b);
  }
}

Scalar scalar_of(const Step& st, double v, int it) {
  if (st.integer) return Scalar(static_cast<int64_t>(v) + (st.vary ? it : 0));
  return Scalar(v + (st.vary ? 0.125 * it : 0.0));
}

// One iteration of `p` over `pool` (inputs first); returns the bytes of every pool entry.
std::vector<std::vector<unsigned char>> run_iteration(const Program& p, std::vector<Tensor> pool,
                                                      int it) {
  manual_seed(p.seed * 31 + static_cast<uint64_t>(it));
  for (const Step& st : p.steps) {
    const Scalar s = scalar_of(st, st.s, it);
    switch (st.kind) {
      case K::Unary:
        pool.push_back(unary(st.op, pool[st.a]));
        break;
      case K::Binary:
        pool.push_back(binary(st.op, pool[st.a], pool[st.b]));
        break;
      case K::ScalarRight: {
        const Tensor& x = pool[st.a];
        pool.push_back(st.op == 0 ? x + s : st.op == 1 ? x - s : st.op == 2 ? x * s : x / s);
        break;
      }
      case K::ScalarLeft: {
        const Tensor& x = pool[st.a];
        pool.push_back(st.op == 0 ? s + x : st.op == 1 ? s - x : st.op == 2 ? s * x : s / x);
        break;
      }
      case K::Clamp: {
        const double lo = st.s + (st.vary ? 0.0625 * it : 0.0);
        pool.push_back(pool[st.a].clamp(lo, st.s2));
        break;
      }
      case K::Pow: {
        // A varying exponent steps through the forms PowScalarF special-cases (2, 0.5, 1).
        const double e = st.vary && !st.integer ? (it == 0 ? st.s : it == 1 ? 2.0 : 0.5) : st.s;
        const Scalar se =
            st.integer ? Scalar(static_cast<int64_t>(st.s) + (st.vary ? it : 0)) : Scalar(e);
        if (st.op == 1)
          pool.push_back(pow(pool[st.a], pool[st.b]));
        else if (st.op == 2)
          pool.push_back(pow(se, pool[st.a]));
        else
          pool.push_back(pool[st.a].pow(se));
        break;
      }
      case K::Cast:
        pool.push_back(pool[st.a].to(st.dtype));
        break;
      case K::Round:
        pool.push_back(st.op == 0   ? pool[st.a].floor()
                       : st.op == 1 ? pool[st.a].ceil()
                                    : pool[st.a].round());
        break;
      case K::Compare:
        pool.push_back(st.b < 0 ? compare(st.op, pool[st.a], s)
                                : compare(st.op, pool[st.a], pool[st.b]));
        break;
      case K::Logical:
        pool.push_back(st.op == 0   ? logical_and(pool[st.a], pool[st.b])
                       : st.op == 1 ? logical_or(pool[st.a], pool[st.b])
                                    : logical_not(pool[st.a]));
        break;
      case K::MaskedFill:
        pool.push_back(pool[st.b].masked_fill(pool[st.a], s));
        break;
      case K::WhereMask:
        pool.push_back(where(pool[st.a], pool[st.c], pool[st.d]));
        break;
      case K::Where: {
        const Tensor m =
            st.b < 0 ? compare(st.op, pool[st.a], s) : compare(st.op, pool[st.a], pool[st.b]);
        pool.push_back(where(m, pool[st.c], pool[st.d]));
        break;
      }
      case K::Random:
        if (st.op == 2)
          pool.push_back(dropout(pool[st.a], st.s + (st.vary ? 0.0625 * it : 0.0), true));
        else
          pool.push_back(st.op ? rand(IntList(st.shape), TensorOptions().dtype(p.dtype))
                               : randn(IntList(st.shape), TensorOptions().dtype(p.dtype)));
        break;
      case K::Sum:
        pool.push_back(pool[st.a].sum());
        break;
      case K::RowReduce: {
        const Tensor& x = pool[st.a];
        std::vector<int64_t> dims;
        if (st.end != 0) {
          for (int d = 0; d < 31; ++d)
            if ((st.end >> d) & 1) dims.push_back(d);
        } else {
          for (int d = st.dim; d >= 1; --d) dims.push_back(-d);
        }
        const bool keep = st.start != 0;
        const IntList dl(dims);
        switch (st.op) {
          case 0:
            pool.push_back(x.sum(dl, keep));
            break;
          case 1:
            pool.push_back(x.mean(dl, keep));
            break;
          case 2:
            pool.push_back(x.amax(dl, keep));
            break;
          case 3:
            pool.push_back(x.amin(dl, keep));
            break;
          case 4:
            pool.push_back((x * 0.01 + 1.0).prod(dl, keep));
            break;
          case 7:
            pool.push_back(x.logsumexp(dl, keep));
            break;
          case 8: {  // over one dim d, chosen without a draw (each seed keeps its program):
            const int64_t d = dims[0];
            switch (pool.size() % 4) {
              case 0: {  // softmax written from primitives
                Tensor e = (x - x.amax(dl, true)).exp();
                pool.push_back(e / e.sum(dl, true));
                break;
              }
              case 1:  // the ops (row kernels over the last dim, eager steps over others)
                pool.push_back(softmax(x, d));
                break;
              case 2:
                pool.push_back(log_softmax(x, d));
                break;
              default: {  // layer_norm over dims d.. (a row of the trailing dims), affine past 0
                const auto sizes = x.sizes();
                std::vector<int64_t> normalized(sizes.begin() + d, sizes.end()), lead;
                for (int64_t i = 0; i < d; ++i) lead.push_back(i);
                const Tensor w = d > 0 ? (x * 0.5).mean(IntList(lead)) : Tensor();
                Tensor v = layer_norm(x, IntList(normalized), w, d > 0 ? w * 0.25 : Tensor(),
                                      d > 0 ? 1e-5 : 0.5);
                if (d + 1 == x.dim() && sizes.back() > 0) {
                  // Plus cross_entropy over the last dim's rows (one value per step, of the
                  // step's shape): targets each row's argmax, ignored (-100) where the row sums
                  // above 3.
                  const Tensor rows = x.reshape({-1, sizes.back()});
                  const Tensor t = rows.argmax(-1).masked_fill(rows.sum({-1}) > 3.0, -100);
                  v = v + cross_entropy(rows * 0.5, t);
                }
                pool.push_back(v);
              }
            }
            break;
          }
          case 9:
            pool.push_back(x.argmax(dims[0], keep));
            break;
          case 10:
            pool.push_back(x.argmin(dims[0], keep));
            break;
          case 11:
            pool.push_back(x.all());
            break;
          case 12:
            pool.push_back(x.any());
            break;
          default:
            pool.push_back(x.var(dl, st.op == 6, keep));
        }
        break;
      }
      case K::InPlace: {
        Tensor& l = pool[st.a];
        const Tensor& b = pool[st.b];
        switch (st.op) {
          case 0:
            l.add_(b);
            break;
          case 1:
            l.sub_(b, s);
            break;
          case 2:
            l.mul_(b);
            break;
          case 3:
            l.mul_(s);
            break;
          case 4:
            l.add_(s);
            break;
          case 5:
            l.clamp_(-1.5, st.s2);
            break;
          case 6:
            l.relu_();
            break;
          default:
            l.div_(b.abs() + 1.0);
            break;
        }
        break;
      }
      case K::InPlaceView: {
        Tensor v = pool[st.a].slice(st.dim, st.start, st.end, st.step);
        switch (st.op) {
          case 0:
            v.mul_(s);
            break;
          case 1:
            v.add_(s);
            break;
          case 2:
            v.relu_();
            break;
          case 3:
            v.add_(pool[st.b].slice(st.dim, st.start, st.end, st.step) * 0.5);
            break;
          default:
            v.sub_(pool[st.b].slice(st.dim, st.start, st.end, st.step).square());
            break;
        }
        break;
      }
    }
  }
  kiln::sync();
  std::vector<std::vector<unsigned char>> out;
  for (const Tensor& t : pool) out.push_back(bytes_of(t));
  return out;
}

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

void fuzz(uint64_t offset, uint64_t count, bool rows = false, bool any_dims = false,
          bool long_rows = false, bool long_cols = false);

TEST(JitFuzz, RandomPointwiseProgramsMatchEager) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  fuzz(env_or("KILN_FUZZ_OFFSET", 0), env_or("KILN_FUZZ_SEEDS", 1500));
}

// The same programs with row reductions mixed in (over the last 1..rank dims, keepdim or not,
// then often broadcast back: prologues and epilogues of row kernels), bitwise equal to eager.
TEST(JitFuzz, RandomProgramsWithRowReductionsMatchEager) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  fuzz(env_or("KILN_FUZZ_OFFSET", 0), env_or("KILN_FUZZ_SEEDS", 500), true);
}

// Reductions over random dim sets (rows, columns, and sets eager gathers), keepdim or not,
// logsumexp, softmax (from primitives and the op), log_softmax, layer_norm over the trailing
// dims from one, cross_entropy over the last dim's rows, argmax / argmin over any one dim, all /
// any, broadcasts back: row and column kernels and eager steps mixed, bitwise equal to eager on
// every ISA path.
TEST(JitFuzz, RandomProgramsWithReductionsOverAnyDimsMatchEager) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  fuzz(env_or("KILN_FUZZ_OFFSET", 0), env_or("KILN_FUZZ_SEEDS", 1200), false, true);
}

// Row reductions (and everything else) over one or two rows longer than a 65536-element chunk
// with three threads: the launcher splits the rows' chunks across the threads and combines
// them in eager's tree (docs/jit.md "Long rows across threads"), bitwise equal to eager.
TEST(JitFuzz, RandomProgramsWithLongRowsMatchEager) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  fuzz(env_or("KILN_FUZZ_OFFSET", 0), env_or("KILN_FUZZ_SEEDS", 500) / 10, true, false, true);
}

// Reductions over any dims (as above) of columns longer than a 2048-row chunk, 16 to 100 of
// them, on three threads: the column kernels' rows split across the threads by chunks (docs/jit.md
// "Rows across threads"), bitwise equal to eager.
TEST(JitFuzz, RandomProgramsWithLongColumnsMatchEager) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  fuzz(env_or("KILN_FUZZ_OFFSET", 0), env_or("KILN_FUZZ_SEEDS", 500) / 10, false, true, false,
       true);
}

// Two seeds that found a tracer bug (fixed 2026-11-28; both failed with KILN_FUZZ_NO_PLAN=1
// too, every region interpreted): a leaf made as a transpose, updated in place (clamp_), then
// reduced (a mean over dim 1; a sum) before a later in-place add. Eager reduces the transposed
// memory in the order its layout gives (ops/cpu/reduce_plan.h); recorded, the in-place result
// was a row-major value, reduced in another order: other last bits. The recorder now writes
// such an input back before an op other than an elementwise one reads it (tracer/segment.h,
// reads_layout_of_written_input; Recorder.ReductionOfAnInputWrittenThroughATransposeKeeps-
// EagerOrder is the minimal program).
TEST(JitFuzz, AnyDimsSeed1073InPlaceOfTransposedLeafThenMean) { fuzz(1073, 1, false, true); }
TEST(JitFuzz, Seed3966InPlaceAfterReadWithPromotedScalar) { fuzz(3966, 1); }

void fuzz(uint64_t offset, uint64_t count, bool rows, bool any_dims, bool long_rows,
          bool long_cols) {
  JitRestore restore;
  // Long rows: three threads, so that one or two rows are split by chunks (run_row_chunks);
  // long columns likewise (one call of columns: its rows split by chunks, launch_cols).
  ConfigOverride<int> threads(config().num_threads,
                              long_rows || long_cols ? 3 : int(config().num_threads));
  ConfigOverride<bool> sync_planning(config().jit_async, false);
  ConfigOverride<int> threshold(config().jit_threshold, -1);
  // Every program recorded and compiled: the eager tier (on by default in the KILN_JIT=0 pass)
  // would run small programs' ops eagerly after a few syncs. With it off, the recorded pass
  // would repeat this test exactly (KILN_SWEEPS_EVERY_ISA_ITSELF).
  ConfigOverride<bool> no_eager_tier(config().jit_eager_tier, false);
  // Debugging aids: KILN_FUZZ_STEPS keeps the first steps of each program; KILN_FUZZ_NO_PLAN=1
  // interprets every region (a failure that stays is the tracer's, not the JIT's).
  const uint64_t max_steps = env_or("KILN_FUZZ_STEPS", 1000);
  std::unique_ptr<testing::PlannerOverride> no_plan;
  if (env_or("KILN_FUZZ_NO_PLAN", 0) != 0)
    no_plan = std::make_unique<testing::PlannerOverride>(nullptr);
  const std::vector<std::string> isas = testing::supported_jit_isas();
  constexpr int kIterations = 3;
  int64_t kernels = 0, fused_nodes = 0, failures = 0, row_kernels = 0, column_launches = 0;
  const int64_t column_launches_before = jit::cpu_jit_counters().column_launches.load();
  const int64_t split_launches_before = jit::cpu_jit_counters().split_row_launches.load() +
                                        jit::cpu_jit_counters().split_column_launches.load();
  const int64_t element_splits_before = jit::cpu_jit_counters().split_element_launches.load();
  int64_t typed_kernels = 0, cast_kernels = 0, bool_store_kernels = 0;  // of the other dtypes
  int64_t pow_kernels = 0, random_kernels = 0;
  for (uint64_t seed = offset; seed < offset + count; ++seed) {
    Program p = Gen(seed, rows, any_dims, long_rows, long_cols).make();
    if (max_steps < p.steps.size()) p.steps.resize(max_steps);
    if (const char* skip = std::getenv("KILN_FUZZ_SKIP_INPLACE")) {  // drop in-place step i
      const size_t i = std::strtoull(skip, nullptr, 10);
      if (i < p.steps.size() &&
          (p.steps[i].kind == K::InPlace || p.steps[i].kind == K::InPlaceView))
        p.steps.erase(p.steps.begin() + static_cast<std::ptrdiff_t>(i));
    }
    const std::string& isa = isas[seed % isas.size()];
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    std::vector<std::vector<std::vector<unsigned char>>> want, got;
    {
      std::vector<Tensor> leaves;
      for (const Input& in : p.inputs) leaves.push_back(make_input(p, in));
      JitMode off(false);
      for (int it = 0; it < kIterations; ++it) want.push_back(run_iteration(p, leaves, it));
    }
    kiln::sync();
    tracer::RegionCache::instance().clear();
    try {
      std::vector<Tensor> leaves;
      for (const Input& in : p.inputs) leaves.push_back(make_input(p, in));
      JitMode on(true);
      for (int it = 0; it < kIterations; ++it) got.push_back(run_iteration(p, leaves, it));
    } catch (const std::exception& e) {
      ADD_FAILURE() << isa << " " << p.text << "threw: " << e.what();
      if (++failures > 5) break;
      continue;
    }
    bool ok = true;
    for (int it = 0; it < kIterations && ok; ++it)
      for (size_t v = 0; v < want[it].size() && ok; ++v)
        if (want[it][v] != got[it][v]) {
          ADD_FAILURE() << "ISA " << isa << ", iteration " << it << ", pool entry %" << v
                        << " differs from eager; the program (KILN_FUZZ_OFFSET=" << seed
                        << " KILN_FUZZ_SEEDS=1):\n"
                        << p.text;
          ok = false;
        }
    if (!ok && ++failures > 5) break;
    std::vector<std::shared_ptr<tracer::RegionPlan>> keep;
    for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
      keep.push_back(r->jit_plan());
      if (const auto* jp = dynamic_cast<const jit::JitPlan*>(keep.back().get())) {
        kernels += jp->num_kernels();
        for (const jit::Step& s : jp->steps()) {
          if (!s.kernel) continue;
          fused_nodes += static_cast<int64_t>(s.kernel->nodes.size());
          const jit::LoopKernel& k = s.kernel->kernel->source();
          bool typed = false, cast = false, bool_store = false, pw = false, rnd = false;
          for (const jit::Expr& e : k.exprs) {
            typed = typed || is_integral(e.type) || (e.op == jit::ExprOp::Load && e.type == kBool);
            cast = cast || e.op == jit::ExprOp::Cast;
            pw = pw || e.op == jit::ExprOp::Pow;
            rnd = rnd || e.op == jit::ExprOp::RandUniform;
          }
          pow_kernels += pw;
          random_kernels += rnd;
          for (int32_t o = 0; o < k.num_outputs(); ++o)
            bool_store = bool_store || k.output_dtype(o) == kBool;
          row_kernels += k.has_reduce();
          typed_kernels += typed;
          cast_kernels += cast;
          bool_store_kernels += bool_store;
        }
      }
    }
  }
  column_launches = jit::cpu_jit_counters().column_launches.load() - column_launches_before;
  const int64_t split_launches = jit::cpu_jit_counters().split_row_launches.load() +
                                 jit::cpu_jit_counters().split_column_launches.load() -
                                 split_launches_before;
  const int64_t element_splits =
      jit::cpu_jit_counters().split_element_launches.load() - element_splits_before;
  if (long_rows || long_cols) {  // the rows were split (each program runs kIterations times)
    EXPECT_GT(split_launches, static_cast<int64_t>(count) / 2) << "launches split by chunks";
  }
  if (long_rows && count >= 20) {  // element outputs stored by chunks too (run_row_chunks)
    EXPECT_GT(element_splits, static_cast<int64_t>(count) / 20) << "element outputs by chunks";
  }
  // Not vacuous: most programs ran fused kernels.
  if (any_dims && count >= 100) {
    EXPECT_GT(row_kernels, static_cast<int64_t>(count) / 2) << "row and column kernels planned";
    EXPECT_GT(column_launches, static_cast<int64_t>(count) / 10) << "column kernels launched";
  }
  if (rows && count >= 100) {
    EXPECT_GT(row_kernels, static_cast<int64_t>(count) / 2) << "row kernels planned";
  }
  if (count >= 100) {
    EXPECT_GT(kernels, static_cast<int64_t>(count)) << "kernels planned";
    EXPECT_GT(fused_nodes, kernels + kernels / 2) << "nodes fused";
    EXPECT_GT(typed_kernels, static_cast<int64_t>(count) / 4) << "kernels of integers or masks";
    EXPECT_GT(cast_kernels, static_cast<int64_t>(count) / 4) << "kernels with casts";
    EXPECT_GT(bool_store_kernels, static_cast<int64_t>(count) / 10) << "kernels storing Bool";
    EXPECT_GT(pow_kernels, static_cast<int64_t>(count) / 20) << "kernels computing pow";
    EXPECT_GT(random_kernels, static_cast<int64_t>(count) / 20) << "kernels drawing (dropout)";
  }
  ::testing::Test::RecordProperty("kernels", static_cast<int>(kernels));
  std::printf(
      "jit fuzz: %llu programs, %lld kernels fusing %lld nodes; %lld kernels of integers or "
      "masks, %lld with casts, %lld storing Bool, %lld computing pow, %lld drawing, %lld row "
      "kernels, %lld column kernel launches, %lld launches split by chunks (%lld storing "
      "elements)\n",
      static_cast<unsigned long long>(count), static_cast<long long>(kernels),
      static_cast<long long>(fused_nodes), static_cast<long long>(typed_kernels),
      static_cast<long long>(cast_kernels), static_cast<long long>(bool_store_kernels),
      static_cast<long long>(pow_kernels), static_cast<long long>(random_kernels),
      static_cast<long long>(row_kernels), static_cast<long long>(column_launches),
      static_cast<long long>(split_launches), static_cast<long long>(element_splits));
}

}  // namespace
}  // namespace kiln
