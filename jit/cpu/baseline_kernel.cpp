#include "jit/cpu/baseline_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>

#include "jit/cpu/cpu_target.h"
#include "jit/cpu/op_kernels.h"
#include "jit/cpu/time_log.h"
#include "runtime/config.h"
#include "runtime/logging.h"
#include "runtime/profiler.h"

namespace kiln::jit {

namespace {

constexpr InnerLayout C = InnerLayout::Contiguous;

// The time each baseline kernel took to make (cpu_jit_baseline_times).
TimeLog& baseline_times() {
  static auto* t = new TimeLog();  // never destroyed: planning may run during exit
  return *t;
}

// A constant's bits in its storage type (a Bool as the byte 0 or 1).
void write_constant(const Expr& e, char* to) {
  switch (e.type) {
    case DType::Bool:
      *to = static_cast<char>(e.ivalue != 0);
      break;
    case DType::Int32: {
      const auto v = static_cast<int32_t>(e.ivalue);
      std::memcpy(to, &v, 4);
      break;
    }
    case DType::Int64:
      std::memcpy(to, &e.ivalue, 8);
      break;
    case DType::Float32: {
      const auto v = static_cast<float>(e.value);
      std::memcpy(to, &v, 4);
      break;
    }
    case DType::Float64:
      std::memcpy(to, &e.value, 8);
      break;
  }
}

// `count` copies of a constant's `es` bytes (its low bytes of `bits`) from `to` on: typed
// stores, not a memcpy call per element (a row kernel's parts fill their constants per block
// of rows: cross-entropy's baseline spent a third of its time in those calls).
void fill_constant(char* to, uint64_t bits, size_t es, int64_t count) {
  auto fill = [&]<class U>(U) {
    U v;
    std::memcpy(&v, &bits, sizeof v);
    std::fill_n(reinterpret_cast<U*>(to), count, v);
  };
  switch (es) {
    case 1:
      fill(uint8_t{});
      break;
    case 4:
      fill(uint32_t{});
      break;
    default:
      fill(uint64_t{});
  }
}

}  // namespace

std::unique_ptr<BaselineKernel> BaselineKernel::build(const LoopKernel& k, JitIsa isa) {
  if (k.has_reduce() || k.uses_index()) return nullptr;
  const auto n = static_cast<int32_t>(k.exprs.size());
  for (const Expr& e : k.exprs)
    if (e.op == ExprOp::RowSize) return nullptr;

  auto b = std::unique_ptr<BaselineKernel>(new BaselineKernel());
  b->num_outputs_ = k.num_outputs();
  std::vector<OpKernelRequest> missing;
  // Under KILN_JIT_BASELINE=only (the tests' mode) a missing op kernel is rendered now, so that
  // every kernel the tier can run gets baseline code; else it is queued (below).
  const bool only = config().jit_baseline == BaselineTier::Only;
  auto code = [&](const LoopKernel& source, std::vector<InnerLayout> layout) {
    KernelFn fn = find_op_kernel(source, layout, isa);
    if (fn == nullptr && only) {
      (void)render_op_kernels({{source, layout}}, isa);
      fn = find_op_kernel(source, layout, isa);
    }
    if (fn == nullptr) missing.push_back({source, std::move(layout)});
    return fn;
  };
  // The op kernels found so far, by op, types and layouts (a chain repeats a few of them: the
  // 1000 adds of kiln-perf's dispatch took 445 µs to look up one by one, each a source, its
  // encoding, a hash and a lock).
  std::vector<std::pair<uint64_t, KernelFn>> found;
  auto memo = [&](uint64_t key, auto&& make) {
    for (const auto& [k2, fn] : found)
      if (k2 == key) return fn;
    KernelFn fn = make();
    if (fn != nullptr) found.emplace_back(key, fn);
    return fn;
  };
  auto copy = [&](DType t, InnerLayout out, InnerLayout in) {
    const uint64_t key = (uint64_t{1} << 63) | static_cast<uint64_t>(t) << 16 |
                         static_cast<uint64_t>(out) << 8 | static_cast<uint64_t>(in);
    return memo(key, [&] { return code(copy_kernel_source(t), {out, in}); });
  };

  // Which operands each operation's op kernel loads (a Pow's Const exponent is its own), where
  // each expression is last read, and the last operation that reads an input in place.
  std::vector<int32_t> last_use(static_cast<size_t>(n), -1);
  std::vector<uint8_t> stored(static_cast<size_t>(n), 0);
  int32_t last_input_read = -1;
  b->steps_.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const Expr& e = k.exprs[static_cast<size_t>(i)];
    Step& s = b->steps_[static_cast<size_t>(i)];
    s.op = e.op;
    s.type = e.type;
    const int32_t from[3] = {e.a, e.b, e.c};
    for (int a = 0; a < expr_arity(e.op); ++a) {
      if (e.op == ExprOp::Pow && a == 1 && k.exprs[static_cast<size_t>(e.b)].op == ExprOp::Const)
        continue;
      s.args[a] = from[a];
      last_use[static_cast<size_t>(from[a])] = i;
      if (k.exprs[static_cast<size_t>(from[a])].op == ExprOp::Load) last_input_read = i;
    }
  }
  for (int32_t j = 0; j < k.num_outputs(); ++j) {
    const int32_t e = k.stores[static_cast<size_t>(j)];
    stored[static_cast<size_t>(e)] = 1;
    // An input stored as it is is copied into a tile at its step (an output may be that input,
    // or another stored one): no output is written before.
    if (k.exprs[static_cast<size_t>(e)].op == ExprOp::Load)
      last_input_read = std::max(last_input_read, e);
  }
  for (int32_t j = 0; j < k.num_outputs(); ++j) {
    const int32_t e = k.stores[static_cast<size_t>(j)];
    Step& s = b->steps_[static_cast<size_t>(e)];
    if (expr_arity(s.op) > 0 && e >= last_input_read && s.direct < 0) s.direct = j;
    const DType t = k.output_dtype(j);
    b->stores_.push_back({e, copy(t, C, C), copy(t, InnerLayout::Strided, C)});
  }

  // Tiles by liveness: an expression's tile is free after its last reader; stored values keep
  // theirs to the tile's end (an output that is not contiguous is written from it there).
  std::vector<int32_t> free_slots;
  std::vector<std::pair<int32_t, int32_t>> live;  // (last reader, slot)
  for (int32_t i = 0; i < n; ++i) {
    const Expr& e = k.exprs[static_cast<size_t>(i)];
    Step& s = b->steps_[static_cast<size_t>(i)];
    for (size_t x = 0; x < live.size();) {
      if (live[x].first < i) {
        free_slots.push_back(live[x].second);
        live[x] = live.back();
        live.pop_back();
      } else {
        ++x;
      }
    }
    const bool used = last_use[static_cast<size_t>(i)] >= 0 || stored[static_cast<size_t>(i)];
    if (!used) {
      s.dead = true;
      continue;
    }
    switch (e.op) {
      case ExprOp::Const: {  // a tile of its own after the others' (filled once per run)
        uint64_t bits = 0;
        write_constant(e, reinterpret_cast<char*>(&bits));
        b->consts_.push_back({i, bits});
        continue;
      }
      case ExprOp::Load:
        s.operand = k.num_outputs() + e.index;
        s.copy_broadcast = copy(e.type, C, InnerLayout::Broadcast);
        s.copy_strided = copy(e.type, C, InnerLayout::Strided);
        if (stored[static_cast<size_t>(i)]) s.copy = copy(e.type, C, C);
        break;
      case ExprOp::Param:
        s.operand = e.index;
        s.copy_broadcast = copy(e.type, C, InnerLayout::Broadcast);
        break;
      default: {
        auto render = [&] {
          const LoopKernel source = op_kernel_source(k, i);
          return code(source,
                      std::vector<InnerLayout>(static_cast<size_t>(source.num_operands()), C));
        };
        // A Pow's Const exponent is part of its op kernel: not memoized by types.
        if (e.op == ExprOp::Pow && k.exprs[static_cast<size_t>(e.b)].op == ExprOp::Const) {
          s.fn = render();
          break;
        }
        uint64_t key = static_cast<uint64_t>(e.op) << 40 | static_cast<uint64_t>(e.type) << 32;
        for (int a = 0; a < 3; ++a)
          if (s.args[a] >= 0)
            key |= (static_cast<uint64_t>(k.exprs[static_cast<size_t>(s.args[a])].type) + 1)
                   << (8 * a);
        s.fn = memo(key, render);
      }
    }
    if (free_slots.empty()) {
      s.slot = b->slots_++;
    } else {
      s.slot = free_slots.back();
      free_slots.pop_back();
    }
    live.emplace_back(stored[static_cast<size_t>(i)] ? INT32_MAX : last_use[static_cast<size_t>(i)],
                      s.slot);
  }
  for (size_t c = 0; c < b->consts_.size(); ++c)
    b->steps_[static_cast<size_t>(b->consts_[c].expr)].slot = b->slots_ + static_cast<int32_t>(c);
  if (!missing.empty()) {
    KILN_DEBUG(Jit, "cpu kernel: no baseline code yet ({} op kernels not rendered, the first:\n{})",
               missing.size(), to_text(missing.front().source));
    render_op_kernels_in_background(std::move(missing), isa);
    return nullptr;
  }
  return b;
}

std::unique_ptr<BaselineKernel> BaselineKernel::make(const LoopKernel& k, JitIsa isa) {
  const int64_t t0 = profiler::now_ns();
  std::unique_ptr<BaselineKernel> b = build(k, isa);
  if (b == nullptr) return nullptr;
  note_baseline_made(k, isa, t0, profiler::now_ns());
  return b;
}

void note_baseline_made(const LoopKernel& k, JitIsa isa, int64_t t0, int64_t t1) {
  if (profiler::enabled())
    profiler::record_kernel_compile(
        fmt::format("kernel {:016x} {} baseline", hash_words(encode(k)), jit_isa_name(isa)), t0,
        t1);
  cpu_jit_counters().baseline_kernels.fetch_add(1);
  baseline_times().add(t1 - t0);
}

bool baseline_pays(const LoopKernel& k, int64_t elements) {
  int64_t passes = k.num_outputs();
  for (const Expr& e : k.exprs) passes += expr_arity(e.op) > 0 ? 1 : 0;
  return elements <= kMaxBaselineWork / std::max<int64_t>(1, passes);
}

std::vector<int64_t> cpu_jit_baseline_times(size_t first) { return baseline_times().since(first); }

size_t cpu_jit_baseline_count() { return baseline_times().size(); }

struct BaselineKernel::Scratch {
  std::vector<uint64_t> words;
  std::vector<Tile> at;
};

namespace {

// The thread's scratch (a plain pointer: no destructor of its own) and its owner, which frees it
// at the thread's exit and notes that it is gone.
thread_local BaselineKernel::Scratch* t_scratch = nullptr;
thread_local bool t_scratch_gone = false;
struct ScratchOwner {
  ~ScratchOwner() {
    delete t_scratch;
    t_scratch = nullptr;
    t_scratch_gone = true;
  }
};
thread_local ScratchOwner t_scratch_owner;

}  // namespace

void BaselineKernel::run(char* const* ptrs, const int64_t* inner, const int64_t* outer,
                         int64_t n_inner, int64_t n_outer, const void* params) const {
  if (n_inner <= 0 || n_outer <= 0) return;
  // Each thread's tiles (64-byte aligned), and where each expression's tile is. A thread's
  // exit may still launch kernels after its scratch is gone (a recorder's flush from its
  // thread-local destructor): such a call brings scratch of its own.
  std::unique_ptr<Scratch> own;
  Scratch* sc = t_scratch;
  if (sc == nullptr) {
    if (t_scratch_gone) {
      own = std::make_unique<Scratch>();
      sc = own.get();
    } else {
      (void)&t_scratch_owner;  // made now, so destroyed before what the thread made earlier
      t_scratch = sc = new Scratch();
    }
  }
  std::vector<uint64_t>& words = sc->words;
  std::vector<Tile>& at = sc->at;
  const size_t need = (static_cast<size_t>(slots_) + consts_.size()) * kTileElements + 8;
  if (words.size() < need) words.resize(need);
  if (at.size() < steps_.size()) at.resize(steps_.size());
  auto addr = reinterpret_cast<uintptr_t>(words.data());
  char* scratch = reinterpret_cast<char*>((addr + 63) & ~uintptr_t{63});
  // The constants over a tile's width (every row of a tile reads the same one).
  const int64_t width = std::min(n_inner, kTileElements);
  for (const Constant& c : consts_) {
    const size_t es = itemsize(steps_[static_cast<size_t>(c.expr)].type);
    char* to = scratch +
               static_cast<int64_t>(steps_[static_cast<size_t>(c.expr)].slot) * kTileElements * 8;
    fill_constant(to, c.bits, es, width);
  }
  if (n_inner >= kTileElements) {
    for (int64_t o = 0; o < n_outer; ++o)
      for (int64_t i0 = 0; i0 < n_inner; i0 += kTileElements)
        run_tile(scratch, ptrs, inner, outer, o, 1, i0, std::min(kTileElements, n_inner - i0),
                 params, at.data());
  } else {
    const int64_t rows = kTileElements / n_inner;
    for (int64_t o = 0; o < n_outer; o += rows)
      run_tile(scratch, ptrs, inner, outer, o, std::min(rows, n_outer - o), 0, n_inner, params,
               at.data());
  }
}

void BaselineKernel::run_tile(char* scratch, char* const* ptrs, const int64_t* inner,
                              const int64_t* outer, int64_t o, int64_t rows, int64_t i0,
                              int64_t width, const void* params, Tile* at) const {
  auto operand = [&](int32_t j) { return ptrs[j] + o * outer[j] + i0 * inner[j]; };
  // Whether operand j walks its row by whole elements (a row of one element always does).
  auto contiguous = [&](int32_t j, DType t) {
    return width == 1 || inner[j] == static_cast<int64_t>(itemsize(t));
  };
  auto tile = [&](int32_t slot) {
    return scratch + static_cast<int64_t>(slot) * kTileElements * 8;
  };
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    if (s.dead) continue;
    const auto es = static_cast<int64_t>(itemsize(s.type));
    switch (s.op) {
      case ExprOp::Const:
        at[i] = {tile(s.slot), 0};
        break;
      case ExprOp::Load: {
        char* from = operand(s.operand);
        const bool in_place = contiguous(s.operand, s.type);
        if (in_place && s.copy == nullptr) {
          at[i] = {from, outer[s.operand]};
          break;
        }
        char* const p[2] = {tile(s.slot), from};
        const int64_t in[2] = {es, inner[s.operand]}, out[2] = {width * es, outer[s.operand]};
        (in_place                ? s.copy
         : inner[s.operand] == 0 ? s.copy_broadcast
                                 : s.copy_strided)(p, in, out, width, rows, nullptr);
        at[i] = {p[0], width * es};
        break;
      }
      case ExprOp::Param: {
        char* const p[2] = {tile(s.slot),
                            const_cast<char*>(static_cast<const char*>(params)) + s.operand * 8};
        const int64_t in[2] = {es, 0}, out[2] = {0, 0};
        s.copy_broadcast(p, in, out, width, 1, nullptr);
        at[i] = {p[0], 0};
        break;
      }
      default: {
        Tile dst{tile(s.slot), width * es};
        if (s.direct >= 0 && contiguous(s.direct, s.type))
          dst = {operand(s.direct), outer[s.direct]};
        char* p[4] = {dst.p};
        int64_t in[4] = {es}, out[4] = {dst.outer};
        int n = 1;
        for (int32_t a : s.args) {
          if (a < 0) continue;
          p[n] = at[a].p;
          in[n] = static_cast<int64_t>(itemsize(steps_[static_cast<size_t>(a)].type));
          out[n] = at[a].outer;
          ++n;
        }
        s.fn(p, in, out, width, rows, nullptr);
        at[i] = dst;
      }
    }
  }
  for (int32_t j = 0; j < num_outputs_; ++j) {
    const Store& st = stores_[static_cast<size_t>(j)];
    const Step& s = steps_[static_cast<size_t>(st.expr)];
    const bool contiguous_out = contiguous(j, s.type);
    if (s.direct == j && contiguous_out) continue;  // written by its op kernel
    const auto es = static_cast<int64_t>(itemsize(s.type));
    const Tile src = at[st.expr];
    char* const p[2] = {operand(j), src.p};
    const int64_t in[2] = {inner[j], es}, out[2] = {outer[j], src.outer};
    (contiguous_out ? st.copy : st.copy_strided)(p, in, out, width, rows, nullptr);
  }
}

}  // namespace kiln::jit
