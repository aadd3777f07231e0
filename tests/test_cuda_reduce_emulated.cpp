// The CUDA row kernels run without a GPU: their rendered CUDA C++ is compiled as host C++ by the
// build's compiler against a CPU stand-in for CUDA's built-ins (tests/cuda/emu_builtins.h: 256
// std::threads per block, barriers, warp shuffles), and launched through the real launch words
// (jit/cuda/launch_words.h) by the real CUDA forms of the ops (jit/cuda/reduce_ops.h) on CPU
// memory. So CI checks what the GPU tests check (tests/test_cuda_reduce.cpp) but CUDA's math
// library: the sum's tree against the order render_reduce.h documents, bitwise; every reduction
// and row op against the CPU within docs/cuda.md's bounds, over several dims, empty dims, zero
// rows, transposed inputs, NaN, rows in a warp and in a block, more rows than the grid.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_reduce_bounds.h"
#include "cuda_test_util.h"
#include "expect_error.h"
#include "jit/cuda/launch_words.h"
#include "jit/cuda/loop_launch.h"
#include "jit/cuda/op_kernel.h"
#include "jit/cuda/reduce_ops.h"
#include "jit/cuda/render.h"
#include "kiln/kiln.h"
#include "runtime/dispatcher.h"

namespace kiln {
namespace {

using testing::values;

using jit::LoopKernel;
using RunFn = void (*)(const uint64_t* words, unsigned grid);

class EmuKernel final : public jit::CompiledKernel {
 public:
  EmuKernel(LoopKernel k, RunFn fn) : k_(std::move(k)), fn_(fn) {}
  const LoopKernel& source() const override { return k_; }
  void launch(const jit::LaunchArgs& args) override {
    jit::cuda::CudaLaunch l = jit::cuda::cuda_launch_words(k_, args);
    if (l.work == 0) return;
    // At most 3 blocks: rows beyond them exercise the kernels' grid-stride loop.
    const int64_t blocks = std::min<int64_t>((l.work + l.per_block - 1) / l.per_block, 3);
    if (l.split_items == 0) {
      fn_(l.words.data(), static_cast<unsigned>(blocks));
      return;
    }
    ++splits;  // as CudaKernel::launch: phase 1 into the scratch, then phase 2
    std::vector<char> scratch(static_cast<size_t>(l.scratch_bytes));
    jit::cuda::set_split_phase(l, k_, scratch.data(), 1);
    fn_(l.words.data(), static_cast<unsigned>(std::min<int64_t>(l.split_items, 3)));
    jit::cuda::set_split_phase(l, k_, scratch.data(), 2);
    fn_(l.words.data(), static_cast<unsigned>(blocks));
  }
  static inline int splits = 0;  // split launches run, to show that a test took that path

 private:
  LoopKernel k_;
  RunFn fn_;
};

// Compiles kernels as host C++ into shared objects and runs them on the stand-in.
class EmuTarget final : public jit::KernelTarget {
 public:
  const char* name() const override { return "cuda-emulated"; }
  int threshold() const override { return 1; }
  bool supports(jit::ExprOp, DType) const override { return true; }

  // Compiles `ks` in two programs on parallel threads (the compiler's start-up and the standard
  // headers cost more than a kernel).
  void prepare(const std::vector<LoopKernel>& ks) {
    std::vector<LoopKernel> todo;
    for (const LoopKernel& k : ks)
      if (!fns_.contains(jit::encode(k))) {
        bool dup = false;
        for (const LoopKernel& t : todo) dup = dup || t == k;
        if (!dup) todo.push_back(k);
      }
    std::vector<std::vector<LoopKernel>> parts(2);
    for (size_t i = 0; i < todo.size(); ++i) parts[i % 2].push_back(todo[i]);
    std::vector<std::future<void>> jobs;
    std::vector<std::vector<std::pair<LoopKernel, RunFn>>> built(2);
    for (int p = 0; p < 2; ++p) {
      const int first = next_;
      next_ += static_cast<int>(parts[p].size());
      jobs.push_back(
          std::async(std::launch::async, [&, p, first] { built[p] = build(parts[p], first); }));
    }
    for (auto& j : jobs) j.get();
    for (auto& b : built)
      for (auto& [k, fn] : b) fns_[jit::encode(k)] = fn;
  }

  std::shared_ptr<jit::CompiledKernel> compile(const LoopKernel& k) override {
    if (!fns_.contains(jit::encode(k))) prepare({k});
    return std::make_shared<EmuKernel>(k, fns_.at(jit::encode(k)));
  }

 private:
  std::vector<std::pair<LoopKernel, RunFn>> build(const std::vector<LoopKernel>& ks, int first) {
    if (ks.empty()) return {};
    std::string src = "#include \"" KILN_TEST_EMU_HEADER "\"\n";
    for (size_t i = 0; i < ks.size(); ++i) {
      const int id = first + static_cast<int>(i);
      const auto r = jit::cuda::render_cuda_kernel(ks[i], fmt::format("kiln_emu_{}", id));
      src += fmt::format(
          "namespace e{0} {{\n{1}\n}}\nextern \"C\" void kiln_emu_run_{0}(const unsigned long "
          "long* w, unsigned grid) {{\n  e{0}::KilnArgs a;\n  std::memcpy(&a, w, sizeof a);\n"
          "  kiln_emu_launch(&e{0}::kiln_emu_{0}, a, grid);\n}}\n",
          id, r.source);
    }
    const std::string base = fmt::format("{}/emu{}", dir_.path(), first);
    std::ofstream(base + ".cpp") << src;
    // -O0: g++ spends its time on the unrolled row kernels, not on running them (the four
    // sweeps: 96 s wall at -O1, 62 at -O0, 2026-11-29).
    const std::string cmd = fmt::format(
        "'{}' -std=c++20 -O0 -w -shared -fPIC -pthread -o '{}.so' '{}.cpp' > '{}.log' 2>&1",
        KILN_TEST_CXX, base, base, base);
    if (std::system(cmd.c_str()) != 0) {
      std::stringstream log;
      log << std::ifstream(base + ".log").rdbuf();
      ADD_FAILURE() << "the emulated kernels do not compile:\n" << log.str().substr(0, 4000);
      throw std::runtime_error("emulated kernels do not compile");
    }
    void* h = ::dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error(::dlerror());
    std::vector<std::pair<LoopKernel, RunFn>> out;
    for (size_t i = 0; i < ks.size(); ++i) {
      void* fn = ::dlsym(h, fmt::format("kiln_emu_run_{}", first + static_cast<int>(i)).c_str());
      if (fn == nullptr) throw std::runtime_error(::dlerror());
      out.emplace_back(ks[i], reinterpret_cast<RunFn>(fn));
    }
    return out;  // the objects stay loaded for the process
  }

  testing::TempDir dir_;
  std::map<std::vector<uint64_t>, RunFn> fns_;
  int next_ = 0;
};

EmuTarget& emu() {
  static EmuTarget t;
  return t;
}

// One op call, run by the CPU's eager kernel and by its CUDA form on the stand-in.
struct Call {
  std::string label;
  OpId op;
  std::vector<Tensor> inputs;
  Attrs attrs;
  // The bound per element of the CPU's result (none: exact), given the call and the result.
  std::function<std::vector<double>(const Call&, const Tensor& cpu)> bound;
};

std::vector<double> as_doubles(const Tensor& t) { return t.to(DType::Float64).to_vector<double>(); }

void check(const Call& c) {
  const OpCall call{c.op, c.inputs, c.attrs};
  OutputMeta m;
  op_def(c.op).meta(call, m);
  const Tensor cpu = empty_tensor(m.sizes, m.dtype, Device::cpu());
  op_def(c.op).eager(call, cpu);
  const Tensor out = empty_tensor(m.sizes, m.dtype, Device::cpu());
  jit::cuda::run_cuda_row_op(call, out, emu());
  if (!is_floating(m.dtype)) {
    EXPECT_EQ(cpu.to(DType::Int64).to_vector<int64_t>(), out.to(DType::Int64).to_vector<int64_t>())
        << c.label;
    return;
  }
  const std::vector<double> a = as_doubles(cpu), b = as_doubles(out);
  const std::vector<double> tol = c.bound ? c.bound(c, cpu) : std::vector<double>(a.size(), 0.0);
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool ok = std::isnan(a[i])   ? std::isnan(b[i])
                    : std::isinf(a[i]) ? a[i] == b[i]
                                       : std::fabs(a[i] - b[i]) <= tol[i];
    if (!ok && ++bad <= 3)
      ADD_FAILURE() << c.label << ": element " << i << " cpu " << a[i] << " emulated cuda " << b[i]
                    << " (bound " << tol[i] << ")";
  }
}

// Compiles every kernel of `calls` at once, then checks each.
void check_all(const std::vector<Call>& calls) {
  std::vector<LoopKernel> ks;
  for (const Call& c : calls) {
    const OpCall call{c.op, c.inputs, c.attrs};
    OutputMeta m;
    op_def(c.op).meta(call, m);
    for (const LoopKernel& k : jit::cuda::row_op_kernels(call, m.dtype)) ks.push_back(k);
  }
  emu().prepare(ks);
  for (const Call& c : calls) check(c);
}

// The documented order (render_reduce.h), written independently: 256 lanes of elements
// l, l + 256, ...; pieces of 8 combined by a binary counter; the tree over the lanes.
double documented_sum(const double* x, int64_t n) {
  if (n == 0) return 0;
  std::vector<double> lane(256, 0.0);
  for (int64_t l = 0; l < 256 && l < n; ++l) {
    std::vector<double> stack;
    double piece = 0;
    int k = 0;
    uint64_t count = 0;
    auto flush = [&] {
      double s = piece;
      k = 0;
      for (uint64_t m = ++count; !(m & 1); m >>= 1) {
        s = stack.back() + s;
        stack.pop_back();
      }
      stack.push_back(s);
    };
    for (int64_t i = l; i < n; i += 256) {
      piece = k == 0 ? x[i] : piece + x[i];
      if (++k == 8) flush();
    }
    if (k) flush();
    double r = stack.back();
    for (int i = static_cast<int>(stack.size()) - 2; i >= 0; --i) r = stack[i] + r;
    lane[l] = r;
  }
  for (int s = 128; s >= 1; s >>= 1)
    for (int l = 0; l < s; ++l)
      if (l + s < n) lane[l] = lane[l] + lane[l + s];
  return lane[0];
}

TEST(CudaReduceEmulated, SumFollowsTheDocumentedOrderBitwise) {
  KILN_CUDA_CODEGEN_TEST_ONCE();
  for (int64_t n : {0, 1, 7, 31, 33, 255, 256, 257, 1000, 2048, 2049, 4096, 70000, 300001}) {
    const int64_t rows = n > 5000 ? 2 : 11;
    const Tensor x = values(DType::Float64, {rows, n}, 3, 3, 0.5);
    for (bool transposed : {false, true}) {
      // The same values, as rows of a transposed layout: the order is the row's, not memory's.
      const Tensor in = transposed ? x.t().contiguous().t() : x;
      Attrs a;
      a.dims = {1};
      const Tensor ins[] = {in};
      const OpCall call{OpId::Sum, ins, a};
      const Tensor out = empty_tensor({rows}, DType::Float64, Device::cpu());
      emu().prepare(jit::cuda::row_op_kernels(call, DType::Float64));
      jit::cuda::run_cuda_row_op(call, out, emu());
      const std::vector<double> v = x.contiguous().to_vector<double>(),
                                got = out.to_vector<double>();
      for (int64_t r = 0; r < rows; ++r) {
        const double want = documented_sum(v.data() + r * n, n);
        EXPECT_EQ(std::memcmp(&want, &got[r], sizeof want), 0)
            << "n = " << n << " row " << r << (transposed ? " transposed" : "") << ": " << got[r]
            << " against " << want;
      }
    }
  }
  // Rows over 2048 elements in fewer than 1024 rows were split over several blocks (launch_words.h)
  // and still follow the order bitwise: 4096, 70000 and 300001 in both layouts at least.
  EXPECT_GE(EmuKernel::splits, 6);
}

// Under ASan the three sweeps below skip: their time is two g++ compiles of the rendered kernels
// and the emulated kernels' run, neither instrumented (the shared objects are built without
// ASan), and the release stage runs them. 130 s of CI's asan stage (2026-11-28, Intel VM). The
// renderer's host code runs under ASan in CudaReduceRender's sweep of every row kernel, and the
// launch path in SumFollowsTheDocumentedOrderBitwise above.
#if defined(__SANITIZE_ADDRESS__)
#define KILN_EMULATED_SWEEP_NOT_UNDER_ASAN() \
  GTEST_SKIP() << "emulated CUDA sweeps run in the release stage, not under ASan"
#else
#define KILN_EMULATED_SWEEP_NOT_UNDER_ASAN() \
  do {                                       \
  } while (0)
#endif

struct Shape {
  DimVector sizes;
  std::vector<int64_t> dims;  // empty: every dim
  bool transpose = false;
  bool keepdim_too = false;
};

TEST(CudaReduceEmulated, ReductionsMatchTheCpu) {
  KILN_CUDA_CODEGEN_TEST_ONCE();
  KILN_EMULATED_SWEEP_NOT_UNDER_ASAN();
  const std::vector<Shape> shapes = {{{5, 7}, {1}, false, true},
                                     {{5, 7}, {0}, false, true},
                                     {{4, 5, 6}, {0, 2}, false, true},
                                     {{3, 0}, {1}},
                                     {{0, 4}, {1}},
                                     {{}, {}},
                                     {{7, 5}, {1}, true},
                                     {{30, 9}, {1}},
                                     {{5, 3000}, {1}},
                                     {{6, 1}, {1}},
                                     {{4, 5}, {}},
                                     {{}, {0}}};
  std::vector<Call> calls;
  // Int64 runs the same code as Int32 (the GPU tests and the NVRTC compile cover it); keepdim
  // changes only the output's strides (tried on three shapes): the emulator's threads are slow.
  for (DType d : {DType::Bool, DType::Int32, DType::Float32, DType::Float64}) {
    const DType f = is_floating(d) ? d : DType::Float32;
    for (const Shape& s : shapes) {
      DimVector sizes = s.sizes;
      if (s.transpose) std::swap(sizes[0], sizes[1]);
      for (bool specials : {false, true}) {
        if (specials && !is_floating(d)) continue;
        for (bool keepdim : {false, true}) {
          if (keepdim && !s.keepdim_too) continue;
          struct Op {
            OpId id;
            const char* name;
            int unbiased;
          };
          for (Op op :
               {Op{OpId::Sum, "sum", 0}, Op{OpId::Mean, "mean", 0}, Op{OpId::Prod, "prod", 0},
                Op{OpId::Amax, "amax", 0}, Op{OpId::Amin, "amin", 0}, Op{OpId::Var, "var", 1},
                Op{OpId::Var, "var biased", 0}, Op{OpId::Logsumexp, "logsumexp", 0},
                Op{OpId::All, "all", 0}, Op{OpId::Any, "any", 0}, Op{OpId::Argmax, "argmax", 0},
                Op{OpId::Argmin, "argmin", 0}}) {
            const bool all_any = op.id == OpId::All || op.id == OpId::Any;
            if (all_any && (!s.dims.empty() || keepdim)) continue;
            const bool prod = op.id == OpId::Prod;
            Tensor x = values(d, sizes, 7, prod ? 0.01 : 4, prod ? 1 : 0, specials);
            if (s.transpose) x = x.t();
            Attrs a;
            for (int64_t dim : s.dims) a.dims.push_back(dim);
            a.ints[0] = keepdim;
            a.ints[1] = op.unbiased;
            OutputMeta m;
            const Tensor ins[] = {x};
            try {
              op_def(op.id).meta(OpCall{op.id, ins, a}, m);
            } catch (const Error&) {
              continue;  // refused alike: the CUDA form runs after the same meta function
            }
            Call c{fmt::format("{} {} {}{} dims {} keepdim {}{}", op.name, d,
                               s.transpose ? "transposed " : "", shape_str(s.sizes),
                               shape_str(IntList(s.dims)), keepdim, specials ? " specials" : ""),
                   op.id,
                   {x},
                   a,
                   nullptr};
            const OpId id = op.id;
            if (is_floating(m.dtype) && id != OpId::Amax && id != OpId::Amin)
              c.bound = [f, id, keepdim, dims = s.dims](const Call& call, const Tensor& cpu) {
                const Tensor& in = call.inputs[0];
                const double n = cpu.numel() == 0 ? 0
                                                  : static_cast<double>(in.numel()) /
                                                        static_cast<double>(cpu.numel());
                std::vector<double> sa(static_cast<size_t>(cpu.numel()), 0.0);
                if (in.numel() > 0 && is_floating(in.dtype()))
                  sa = as_doubles(sum(abs(in.to(DType::Float64)), IntList(dims), keepdim));
                std::vector<double> tol;
                const std::vector<double> ref = as_doubles(cpu);
                for (size_t i = 0; i < ref.size(); ++i) {
                  switch (id) {
                    case OpId::Sum:
                      tol.push_back(testing::sum_bound(f, n, sa[i]));
                      break;
                    case OpId::Mean:
                      tol.push_back(testing::mean_bound(f, n, sa[i]));
                      break;
                    case OpId::Prod:
                      tol.push_back(testing::prod_bound(f, n, ref[i]));
                      break;
                    case OpId::Var:
                      tol.push_back(testing::var_bound(f, n, ref[i]));
                      break;
                    default:
                      tol.push_back(testing::logsumexp_bound(f, n, ref[i]));
                  }
                }
                return tol;
              };
            calls.push_back(std::move(c));
          }
        }
      }
    }
  }
  EXPECT_GT(calls.size(), 250u);
  check_all(calls);
}

TEST(CudaReduceEmulated, RowOpsMatchTheCpu) {
  KILN_CUDA_CODEGEN_TEST_ONCE();
  KILN_EMULATED_SWEEP_NOT_UNDER_ASAN();
  std::vector<Call> calls;
  struct Sm {
    DimVector sizes;
    int64_t dim;
    bool transpose = false;
  };
  for (DType d : {DType::Bool, DType::Int32, DType::Float32, DType::Float64}) {
    for (const Sm& s : std::vector<Sm>{{{4, 7}, -1},
                                       {{4, 7}, 0},
                                       {{6, 4, 5}, 1},
                                       {{5, 3000}, 1},
                                       {{40, 3}, 1},
                                       {{5, 1}, 1},
                                       {{0, 5}, 1},
                                       {{7, 5}, 1, true},
                                       {{}, 0}}) {
      for (bool specials : {false, true}) {
        if (specials && !is_floating(d)) continue;
        DimVector sizes = s.sizes;
        if (s.transpose) std::swap(sizes[0], sizes[1]);
        Tensor x = values(d, sizes, 11, 4, 0, specials);
        if (s.transpose) x = x.t();
        for (OpId id : {OpId::Softmax, OpId::LogSoftmax}) {
          Attrs a;
          a.ints[0] = s.dim;
          const double n =
              x.dim() == 0 ? 1 : static_cast<double>(x.sizes()[(s.dim + x.dim()) % x.dim()]);
          calls.push_back(
              {fmt::format("{} {} {}{} dim {}{}", op_name(id), d, s.transpose ? "transposed " : "",
                           shape_str(s.sizes), s.dim, specials ? " specials" : ""),
               id,
               {x},
               a,
               [n, id](const Call& c, const Tensor& cpu) {
                 const std::vector<double> ref = as_doubles(cpu);
                 const std::vector<double> xs = as_doubles(c.inputs[0].contiguous());
                 std::vector<double> tol;
                 for (size_t i = 0; i < ref.size(); ++i)
                   tol.push_back(id == OpId::Softmax
                                     ? testing::softmax_bound(cpu.dtype(), n, ref[i])
                                     : testing::log_softmax_bound(cpu.dtype(), n, xs[i], ref[i]));
                 return tol;
               }});
        }
      }
    }
  }
  struct Ln {
    DimVector sizes, normalized;
    bool transpose;
  };
  for (DType d : {DType::Float32, DType::Float64}) {
    for (const Ln& s : std::vector<Ln>{{{4, 7}, {7}, false},
                                       {{2, 3, 5}, {3, 5}, false},
                                       {{5, 6}, {6}, true},
                                       {{3, 3000}, {3000}, false},
                                       {{40, 8}, {8}, false},
                                       {{0, 8}, {8}, false},
                                       {{6, 1}, {1}, false}}) {
      DimVector sizes = s.sizes;
      if (s.transpose) std::swap(sizes[0], sizes[1]);
      Tensor x = values(d, sizes, 5, 2, 1);
      if (s.transpose) x = x.t();
      const Tensor w = values(d, s.normalized, 6, 0.1, 1), b = values(d, s.normalized, 8, 0.1);
      double n = 1;
      for (int64_t v : s.normalized) n *= static_cast<double>(v);
      for (int flags = 0; flags < 4; ++flags) {
        Attrs a;
        a.dims = s.normalized;
        a.scalars[0] = Scalar(1e-5);
        a.ints[0] = flags & 1;
        a.ints[1] = flags >> 1;
        std::vector<Tensor> in = {x, w, b};  // growing {x} makes GCC 12 warn (-Warray-bounds)
        if (!(flags & 2)) in.pop_back();
        if (!(flags & 1)) in.erase(in.begin() + 1);
        calls.push_back({fmt::format("layer_norm {} {}{} flags {}", d,
                                     s.transpose ? "transposed " : "", shape_str(s.sizes), flags),
                         OpId::LayerNorm, in, a, [n](const Call&, const Tensor& cpu) {
                           std::vector<double> tol;
                           for (double v : as_doubles(cpu))
                             tol.push_back(testing::layer_norm_bound(cpu.dtype(), n, v));
                           return tol;
                         }});
      }
    }
    struct Ce {
      int64_t n, c;
      std::vector<int64_t> ignored;
    };
    for (const Ce& k : std::vector<Ce>{{8, 10, {}},
                                       {8, 10, {0, 5}},
                                       {3, 3000, {1}},
                                       {40, 3, {}},
                                       {4, 3, {0, 1, 2, 3}},
                                       {0, 5, {}},
                                       {3, 0, {0, 1, 2}},
                                       {1, 1, {}},
                                       {-1, 10, {}}}) {
      const bool unbatched = k.n < 0;
      const int64_t rows = unbatched ? 1 : k.n;
      const Tensor x = unbatched ? values(d, {k.c}, 9) : values(d, {rows, k.c}, 9);
      std::vector<int64_t> t;
      for (int64_t i = 0; i < rows; ++i) t.push_back(k.c ? (i * 7 + 3) % k.c : 0);
      for (int64_t i : k.ignored) t[i] = -100;
      const Tensor target = unbatched ? from_vector(t, {1}).reshape({}) : from_vector(t, {rows});
      Attrs a;
      a.ints[0] = -100;
      const double xmax = x.numel() ? amax(abs(x.to(DType::Float64))).item<double>() : 0;
      calls.push_back(
          {fmt::format("cross_entropy {} [{}, {}] ignoring {}", d, k.n, k.c, k.ignored.size()),
           OpId::CrossEntropy,
           {x, target},
           a,
           [k, rows, xmax](const Call&, const Tensor& cpu) {
             const double v = cpu.to(DType::Float64).item<double>();
             return std::vector<double>{testing::cross_entropy_bound(
                 cpu.dtype(), static_cast<double>(k.c), static_cast<double>(rows), xmax, v)};
           }});
    }
  }
  // A strided target (every other element) and a transposed logits view.
  const Tensor wide = from_vector<int64_t>({1, 9, 4, 9, 0, 9}, {6});
  Attrs a;
  a.ints[0] = -100;
  calls.push_back({"cross_entropy strided",
                   OpId::CrossEntropy,
                   {values(DType::Float32, {5, 3}, 2).t(), wide.slice(0, 0, 6, 2)},
                   a,
                   [](const Call&, const Tensor& cpu) {
                     const double v = cpu.item<float>();
                     return std::vector<double>{
                         testing::cross_entropy_bound(DType::Float32, 5, 3, 16, v)};
                   }});
  check_all(calls);
  // A target out of range: the CPU's error, before any kernel runs.
  const Tensor x[] = {ones({3, 4}), from_vector<int64_t>({0, 4, 1}, {3})};
  const Tensor out = empty_tensor({}, DType::Float32, Device::cpu());
  testing::expect_error(
      [&] {
        jit::cuda::run_cuda_row_op(OpCall{OpId::CrossEntropy, x, a}, out, emu());
      },
      "cross_entropy: target 4 at position 1 is out of range for 4 classes");
}

// The pointwise kernels' vector forms (render.h) on the stand-in: rank 1 and rank 2 (a [rows, 1]
// or [cols] operand of a binary op: rows of a multiple of 4, aligned), against the CPU bitwise;
// the launcher flags exactly the aligned layouts (a row length not a multiple of 4, a view
// starting one element in, or a transposed operand take the scalar loops, also checked).
TEST(CudaReduceEmulated, PointwiseVectorFormsMatchTheCpu) {
  KILN_CUDA_CODEGEN_TEST_ONCE();
  KILN_EMULATED_SWEEP_NOT_UNDER_ASAN();
  for (DType d : {DType::Float32, DType::Float64, DType::Int32}) {
    for (int64_t cols : {4, 8, 12, 1024, 6, 1}) {
      const int64_t rows = 5;
      const Tensor xb = values(d, {rows * cols + 1}, 21, 4, 0);
      const Tensor yb = values(d, {rows * cols + 1}, 22, 4, 0);
      struct Case {
        std::string label;
        Tensor x, y;
        bool vec;  // whether the launch should take a vector form
      };
      const bool mult4 = cols % 4 == 0;
      const std::vector<Case> cases = {
          {"[r,c] - [r,1]", xb.slice(0, 0, rows * cols).view({rows, cols}),
           yb.slice(0, 0, rows).view({rows, 1}), mult4 || cols == 1},
          {"[r,c] - [c]", xb.slice(0, 0, rows * cols).view({rows, cols}), yb.slice(0, 0, cols),
           mult4 || cols == 1},
          {"[r,c] - [r,c]", xb.slice(0, 0, rows * cols).view({rows, cols}),
           yb.slice(0, 0, rows * cols).view({rows, cols}), true},
          {"[r,c] one in - [r,1]", xb.slice(0, 1, rows * cols + 1).view({rows, cols}),
           yb.slice(0, 0, rows).view({rows, 1}), false},
          {"[r,c] transposed - [c]", yb.slice(0, 0, rows * cols).view({cols, rows}).t(),
           xb.slice(0, 0, cols), cols == 1},
      };
      for (const Case& c : cases) {
        for (OpId op : {OpId::Sub, OpId::Maximum}) {
          const Tensor ins[] = {c.x, c.y};
          const OpCall call{op, ins, {}};
          const Tensor want = op == OpId::Sub ? c.x - c.y : maximum(c.x, c.y);
          const LoopKernel k = jit::cuda::op_loop_kernel(call, d, Device::cpu());
          const Tensor out = empty_tensor(want.impl()->sizes(), d, Device::cpu());
          jit::LaunchArgs a;
          a.sizes = out.impl()->sizes();
          a.ptrs.push_back(static_cast<char*>(out.impl()->data()));
          a.strides.push_back(jit::cuda::cuda_byte_strides(out.impl(), a.sizes));
          for (const Tensor& t : ins) {
            a.ptrs.push_back(static_cast<char*>(t.impl()->data()));
            a.strides.push_back(jit::cuda::cuda_byte_strides(t.impl(), a.sizes));
          }
          const std::string label = fmt::format("{} {} cols {}", c.label, d, cols);
          const auto words = jit::cuda::cuda_launch_words(k, a).words;
          EXPECT_EQ(
              (words[jit::cuda::CudaArgLayout::kRank] & jit::cuda::CudaArgLayout::kVecFlag) != 0,
              c.vec)
              << label;
          emu().compile(k)->launch(a);
          EXPECT_TRUE(equal(want, out)) << label;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln
