#include "jit/cpu/cpu_kernel.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include "ops/cpu/elementwise_loop.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/parallel.h"
#include "runtime/profiler.h"
#include "tracer/region_runner.h"

namespace kiln::jit {

CoalescedLaunch coalesce_launch(const LaunchArgs& a) { return coalesce_dims(a, 0, a.sizes.size()); }

CoalescedLaunch coalesce_dims(const LaunchArgs& a, size_t d0, size_t d1) {
  const size_t nops = a.ptrs.size();
  // Built innermost first, then turned outermost first.
  DimVector sizes;
  SmallVector<int64_t, 32> flat;  // [dim][operand]
  for (size_t d = d1; d-- > d0;) {
    if (a.sizes[d] == 1) continue;
    bool merge = !sizes.empty();
    const size_t last = (sizes.size() - 1) * nops;
    for (size_t j = 0; merge && j < nops; ++j)
      merge = a.strides[j][d] == flat[last + j] * sizes.back();
    if (merge) {  // dim d continues the inner one: one longer dim with the inner stride
      sizes.back() *= a.sizes[d];
      continue;
    }
    sizes.push_back(a.sizes[d]);
    for (size_t j = 0; j < nops; ++j) flat.push_back(a.strides[j][d]);
  }
  if (sizes.empty()) {
    sizes.push_back(1);
    for (size_t j = 0; j < nops; ++j) flat.push_back(0);
  }
  CoalescedLaunch c;
  c.nops = nops;
  const size_t rank = sizes.size();
  c.sizes.resize(rank);
  c.flat.resize(rank * nops);
  for (size_t d = 0; d < rank; ++d) {
    c.sizes[d] = sizes[rank - 1 - d];
    for (size_t j = 0; j < nops; ++j) c.flat[d * nops + j] = flat[(rank - 1 - d) * nops + j];
  }
  return c;
}

namespace {
std::mutex g_block_hook_mu;
std::function<void()> g_block_hook;  // under g_block_hook_mu
std::atomic<bool> g_has_block_hook{false};
}  // namespace

void set_progressive_block_hook(std::function<void()> hook) {
  std::lock_guard lock(g_block_hook_mu);
  g_has_block_hook.store(static_cast<bool>(hook));
  g_block_hook = std::move(hook);
}

void progressive_block_done() {
  if (!g_has_block_hook.load()) return;
  std::function<void()> hook;
  {
    std::lock_guard lock(g_block_hook_mu);
    hook = g_block_hook;
  }
  if (hook) hook();
}

void CpuKernel::pack_params(const LaunchArgs& args, uint64_t* words) const {
  KILN_CHECK(static_cast<int32_t>(args.params.size()) >= k_.num_params(),
             "cpu kernel: launched with {} parameters, the kernel reads {}", args.params.size(),
             k_.num_params());
  for (size_t p = 0; p < static_cast<size_t>(k_.num_params()); ++p)
    visit_dtype(k_.params[p], [&]<class T>(TypeTag<T>) {
      const T v = args.params[p].to<T>();
      std::memcpy(&words[p], &v, sizeof(T));
    });
}

void CpuKernel::launch(const LaunchArgs& args) { launch_any(args, false); }

bool CpuKernel::try_launch(const LaunchArgs& args) {
  if (reduces() && !may_launch(args.sizes, args.reduced_dims, args.inner_dims)) return false;
  return launch_any(args, true);
}

bool CpuKernel::launch_any(const LaunchArgs& args, bool decline) {
  const size_t nops = args.ptrs.size();
  KILN_CHECK(static_cast<int32_t>(nops) == k_.num_operands() && args.strides.size() == nops,
             "cpu kernel: launched with {} operands, the kernel has {}", nops, k_.num_operands());
  if (reduces())
    return args.inner_dims > 0 ? launch_cols(args, decline) : launch_rows(args, decline);
  for (int64_t s : args.sizes)
    if (s == 0) return true;
  // A kernel drawing random numbers reads each element's row-major index: a hidden last operand
  // with the index space's row-major strides, coalesced and split with the others, whose
  // "pointer" is the index itself (a number, never dereferenced).
  const bool with_index = k_.uses_index();
  LaunchArgs indexed;
  if (with_index) {
    indexed.sizes = args.sizes;
    indexed.ptrs = args.ptrs;
    indexed.strides = args.strides;
    indexed.ptrs.push_back(nullptr);
    DimVector rm(args.sizes.size(), 0);
    int64_t step = 1;
    for (size_t d = args.sizes.size(); d-- > 0;) {
      rm[d] = step;
      step *= args.sizes[d];
    }
    indexed.strides.push_back(rm);
  }
  const LaunchArgs& a = with_index ? indexed : args;
  const size_t nall = a.ptrs.size();
  CoalescedLaunch c = coalesce_launch(a);
  const size_t rank = c.sizes.size();
  const int64_t n_inner = c.sizes[rank - 1];

  SmallVector<InnerLayout, 16> layout(nall);
  SmallVector<int64_t, 16> inner(nall), outer(nall, 0), esize(nall);
  for (size_t j = 0; j < nall; ++j) {
    esize[j] =
        j < nops ? static_cast<int64_t>(itemsize(k_.operand_dtype(static_cast<int32_t>(j)))) : 1;
    const int64_t s = c.stride(j, rank - 1);
    inner[j] = s;
    const bool output = static_cast<int32_t>(j) < k_.num_outputs();
    if (s == esize[j] || n_inner == 1) {
      layout[j] = InnerLayout::Contiguous;
    } else if (s == 0 && !output) {
      layout[j] = InnerLayout::Broadcast;
    } else {
      layout[j] = InnerLayout::Strided;
    }
    if (rank >= 2) outer[j] = c.stride(j, rank - 2);
  }
  // An input transposed against the outputs (its innermost stride a cache line or more, the next
  // dim's smaller): launched in tiles of kTileRows rows by kTileCols columns, as eager's
  // ElementwiseLoop walks them (ops/cpu/elementwise_loop.h), so each of its lines serves many
  // rows. [8192, 1024] Float32, best of 11, three interleaved runs on the 2-core Zen 3: `x.t() *
  // 2` 12-16 ms tiled, 19-36 row by row (eager 22-24); `x.t() + y` 19-30 against 40-51 (eager
  // 36-37); `x.t().exp()`, compute-bound, 30-36 either way.
  constexpr int64_t kTileRows = ElementwiseLoop::kTileRows, kTileCols = ElementwiseLoop::kTileCols;
  bool tiled = false;
  if (rank >= 2 && n_inner >= 2 * kTileCols) {
    for (size_t j = static_cast<size_t>(k_.num_outputs()); j < nops; ++j)
      tiled = tiled || ElementwiseLoop::transposed_input(inner[j], outer[j]);
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      tiled = tiled && layout[j] == InnerLayout::Contiguous;
  }
  // Large outputs that nothing reads soon go around the caches (non-temporal stores move ~35%
  // more bytes per second here: jit-codegen.md), when every row start is vector-aligned (and
  // the launch is not tiled: short runs of many rows).
  const int64_t vec_bytes = isa_ == JitIsa::Avx512 ? 64 : isa_ == JitIsa::Avx2 ? 32 : 16;
  bool streaming = !tiled;
  int64_t numel = 1;
  for (int64_t s : c.sizes) numel *= s;
  numel = std::max(numel, args.whole_elements);  // a part of a larger launch: the whole's size
  for (int32_t j = 0; j < k_.num_outputs() && streaming; ++j) {
    streaming = layout[j] == InnerLayout::Contiguous && numel * esize[j] >= kStreamingBytes &&
                k_.output_dtype(j) != DType::Bool &&
                reinterpret_cast<uintptr_t>(args.ptrs[j]) % vec_bytes == 0 &&
                (rank < 2 || outer[j] % vec_bytes == 0);
    for (size_t d = 0; d + 2 < rank && streaming; ++d) streaming = c.stride(j, d) % vec_bytes == 0;
  }
  // Baseline code until the layout's rendering is made (it is not timed for the store choice);
  // a launch too large for it to pay (baseline_pays) runs it only until the rendering lands (a
  // progressive launch).
  StoreChoice::Pick stores{false, false};
  bool progressive = false;
  KernelFn fn =
      launch_code(baseline_ != nullptr, baseline_pays(k_, numel), {layout.data(), layout.size()},
                  streaming, false, args.whole_elements > 0, stores, progressive);

  SmallVector<uint64_t, 16> param_words(static_cast<size_t>(k_.num_params()) + 1, 0);
  pack_params(args, param_words.data());
  const void* params = param_words.data();

  // Rows: every index of the dims above the innermost, flattened; the outer of the rendered
  // 2-D loop is the innermost of those, the rest are walked here.
  const int64_t n_outer = rank >= 2 ? c.sizes[rank - 2] : 1;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= c.sizes[d];
  // Runs rows [r0, r1) over the inner range [i0, i1).
  auto run_rows = [&](int64_t r0, int64_t r1, int64_t i0, int64_t i1) {
    SmallVector<char*, 8> p(nall);
    SmallVector<int64_t, 8> off(nall);
    while (r0 < r1) {
      const int64_t o = r0 % n_outer;
      int64_t rest = r0 / n_outer;
      for (size_t j = 0; j < nall; ++j) off[j] = o * outer[j] + i0 * inner[j];
      for (size_t d = rank >= 2 ? rank - 2 : 0; d-- > 0;) {
        const int64_t idx = rest % c.sizes[d];
        rest /= c.sizes[d];
        for (size_t j = 0; j < nall; ++j) off[j] += idx * c.stride(j, d);
      }
      for (size_t j = 0; j < nops; ++j) p[j] = args.ptrs[j] + off[j];
      if (with_index) p[nops] = reinterpret_cast<char*>(static_cast<uintptr_t>(off[nops]));
      const int64_t count = std::min(r1 - r0, n_outer - o);
      if (fn != nullptr)
        fn(p.data(), inner.data(), outer.data(), i1 - i0, count, params);
      else
        baseline_->run(p.data(), inner.data(), outer.data(), i1 - i0, count, params);
      r0 += count;
    }
  };
  const int64_t total = rows * n_inner;
  const int threads = num_threads();
  const int64_t t0 = profiler::enabled() ? profiler::now_ns() : 0;
  const StoreTrial trial(&stores_, stores, total, name_, logging::Subsystem::Jit);
  const int64_t tr = (rows + kTileRows - 1) / kTileRows, tc = (n_inner + kTileCols - 1) / kTileCols;
  auto tiles = [&](int64_t a, int64_t b) {
    for (int64_t t = a; t < b; ++t) {
      const int64_t r = t / tc, c = t % tc;
      run_rows(r * kTileRows, std::min(rows, (r + 1) * kTileRows), c * kTileCols,
               std::min(n_inner, (c + 1) * kTileCols));
    }
  };
  if (progressive) {
    // Items: the tiles, or the (row, 64-element chunk) pairs, in order, as the split of few long
    // rows below takes them (every chunk starts aligned, for non-temporal stores); a range of
    // them runs as whole rows where it covers them.
    const int64_t chunks = (n_inner + 63) / 64;
    auto run_items = [&](int64_t b, int64_t e) {
      while (b < e) {
        const int64_t r = b / chunks, c = b % chunks;
        if (c == 0 && e - b >= chunks) {
          const int64_t whole = (e - b) / chunks;
          run_rows(r, r + whole, 0, n_inner);
          b += whole * chunks;
        } else {
          const int64_t end = std::min(chunks, c + (e - b));
          run_rows(r, r + 1, c * 64, std::min(n_inner, end * 64));
          b += end - c;
        }
      }
    };
    const int64_t per_item = tiled ? kTileRows * kTileCols : 64;
    const int64_t items = tiled ? tr * tc : rows * chunks;
    auto run = [&](int64_t b, int64_t e) { tiled ? tiles(b, e) : run_items(b, e); };
    const int64_t done =
        baseline_until_rendered(items, kProgressiveBlockElements / per_item,
                                {layout.data(), layout.size()}, streaming, false, fn, stores, run);
    if (fn != nullptr && done < items) {
      if (threads <= 1 || (items - done) * per_item <= kParallelGrain || in_parallel_region())
        run(done, items);
      else
        parallel_for(done, items, std::max<int64_t>(1, kParallelGrain / per_item), run);
    }
  } else if (tiled) {
    if (threads <= 1 || total <= kParallelGrain || in_parallel_region())
      tiles(0, tr * tc);
    else
      parallel_for(0, tr * tc, std::max<int64_t>(1, kParallelGrain / (kTileRows * kTileCols)),
                   tiles);
  } else if (threads <= 1 || total <= kParallelGrain || in_parallel_region()) {
    run_rows(0, rows, 0, n_inner);
  } else if (rows >= 4 * threads) {
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / n_inner);
    parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) { run_rows(r0, r1, 0, n_inner); });
  } else {  // few long rows: split the inner range in 64-element aligned chunks
    const int64_t chunks = (n_inner + 63) / 64;
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / 64 / rows);
    parallel_for(0, chunks, grain, [&](int64_t c0, int64_t c1) {
      run_rows(0, rows, c0 * 64, std::min(n_inner, c1 * 64));
    });
  }
  if (t0 != 0) profiler::record_kernel_launch(name_, t0, profiler::now_ns());
  return true;
}

void CpuKernel::start_tier_up() {
  {
    std::lock_guard lock(mu_);
    if (!has_baseline() || tier_up_.empty() || tier_up_queued_ ||
        config().jit_baseline == BaselineTier::Only)
      return;
    for (const TierUp& t : tier_up_) tier_up_asked_.push_back(t);
    tier_up_queued_ = true;
  }
  tracer::run_in_background([self = weak_from_this()] {
    if (std::shared_ptr<CpuKernel> k = self.lock()) k->tier_up();
  });
}

bool CpuKernel::tiered_up(std::span<const InnerLayout> layout, bool large, bool columns) {
  bool queue = false;
  {
    std::lock_guard lock(mu_);
    auto same = [&](const std::vector<InnerLayout>& l) {
      return std::equal(l.begin(), l.end(), layout.begin(), layout.end());
    };
    for (const Variant& v : variants_)
      if (v.columns == columns && same(v.layout)) return true;
    if (tier_up_failed_ || config().jit_baseline == BaselineTier::Only) return false;
    for (const TierUp& t : tier_up_asked_)
      if (t.columns == columns && same(t.layout)) return false;
    tier_up_asked_.push_back(
        {std::vector<InnerLayout>(layout.begin(), layout.end()), large, columns});
    tier_up_.push_back(tier_up_asked_.back());
    queue = !tier_up_queued_;
    tier_up_queued_ = true;
  }
  if (queue)
    tracer::run_in_background([self = weak_from_this()] {
      if (std::shared_ptr<CpuKernel> k = self.lock()) k->tier_up();
    });
  return false;
}

bool CpuKernel::runs_baseline(std::span<const InnerLayout> layout, bool columns) const {
  std::lock_guard lock(mu_);
  if (columns ? baseline_cols_ == nullptr : baseline_ == nullptr && baseline_rows_ == nullptr)
    return false;
  for (const Variant& v : variants_)
    if (v.columns == columns &&
        std::equal(v.layout.begin(), v.layout.end(), layout.begin(), layout.end()))
      return false;
  return true;
}

void CpuKernel::tier_up() {
  const StoreChoice::Mode mode = StoreChoice::mode_from(config().jit_streaming);
  for (;;) {
    TierUp t;
    {
      std::lock_guard lock(mu_);
      if (tier_up_.empty() || tier_up_failed_) {
        tier_up_.clear();
        tier_up_queued_ = false;
        return;
      }
      t = std::move(tier_up_.front());
      tier_up_.erase(tier_up_.begin());
    }
    try {
      if (t.large && mode != StoreChoice::Mode::Off) variant(t.layout, true, t.columns);
      if (!t.large || mode != StoreChoice::Mode::On) variant(t.layout, false, t.columns);
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(mu_);
        tier_up_failed_ = true;
      }
      cpu_jit_counters().baseline_kept.fetch_add(1);
      profiler::record_fallback("cpu kernel rendering", e.what());
      KILN_WARN(Jit, "{}: rendering failed ({}); it keeps running its baseline code", name_,
                e.what());
    }
  }
}

}  // namespace kiln::jit
