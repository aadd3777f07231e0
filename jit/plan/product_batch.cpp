#include "jit/plan/product_batch.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "jit/plan/plan_frame.h"
#include "ops/cpu/blas_gemm.h"
#include "runtime/config.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "runtime/parallel.h"

namespace kiln::jit {

namespace {

// The most bytes a batch's product may take: it lives until its last row slice dies, where
// the separate products each lived from their step to their readers'.
constexpr int64_t kMaxBatchBytes = int64_t{64} << 20;

std::mutex g_answers_mu;
std::vector<std::pair<BatchShape, bool>> g_answers;
std::atomic<int64_t> g_probes{0}, g_batched_runs{0}, g_blocked_runs{0};
std::atomic<bool> g_probe_says_no{false};

Tensor view_of(const Tensor& base, DimVector sizes, DimVector strides, int64_t offset) {
  const TensorImpl* b = base.impl();
  return Tensor(make_ref<TensorImpl>(std::move(sizes), std::move(strides), offset, b->dtype(),
                                     b->device(), b->storage_ref()));
}

// Values in [-1, 1) from a fixed 64-bit LCG (the user's generator is left alone).
void fill_pseudo_random(const Tensor& t, uint64_t state) {
  const int64_t n = t.impl()->numel();
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) * 0x1.0p-52 - 1.0;
  };
  if (t.impl()->dtype() == DType::Float32) {
    auto* p = static_cast<float*>(t.impl()->data());
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(next());
  } else {
    auto* p = static_cast<double*>(t.impl()->data());
    for (int64_t i = 0; i < n; ++i) p[i] = next();
  }
}

// One product of n * M rows against the n products of M rows, each computed by eager's calls
// for its size (blas::gemm_2d), in this thread's context.
bool probe(const BatchShape& s) {
  const Device cpu = Device::cpu();
  const int64_t rows = s.n * s.M, item = static_cast<int64_t>(itemsize(s.dtype));
  Tensor a = empty_tensor({rows, s.K}, s.dtype, cpu);
  Tensor b = empty_tensor(s.trans_b ? DimVector{s.N, s.K} : DimVector{s.K, s.N}, s.dtype, cpu);
  fill_pseudo_random(a, 1);
  fill_pseudo_random(b, 2);
  if (s.trans_b) b = view_of(b, {s.K, s.N}, {1, s.K}, 0);
  Tensor whole = empty_tensor({rows, s.N}, s.dtype, cpu);
  if (!blas::gemm_2d(a.impl(), b.impl(), whole.impl())) return false;
  Tensor part = empty_tensor({s.M, s.N}, s.dtype, cpu);
  const auto* w = static_cast<const char*>(whole.impl()->data());
  for (int64_t t = 0; t < s.n; ++t) {
    const Tensor at = row_view(a, s.M, s.K, s.K, t * s.M * s.K);
    if (!blas::gemm_2d(at.impl(), b.impl(), part.impl())) return false;
    if (std::memcmp(part.impl()->data(), w + t * s.M * s.N * item,
                    static_cast<size_t>(s.M * s.N * item)) != 0)
      return false;
  }
  return true;
}

}  // namespace

bool batch_keeps_bits(const BatchShape& s) {
  if (g_probe_says_no.load(std::memory_order_relaxed)) return false;
  {
    std::lock_guard<std::mutex> lock(g_answers_mu);
    for (const auto& [shape, keeps] : g_answers)
      if (shape == s) return keeps;
  }
  // Probed without the lock: the probe runs parallel_for, whose thread may pick up another
  // task that asks here. Two threads may probe one shape; both get the same answer.
  g_probes.fetch_add(1, std::memory_order_relaxed);
  const bool keeps = probe(s);
  std::lock_guard<std::mutex> lock(g_answers_mu);
  g_answers.emplace_back(s, keeps);
  return keeps;
}

int64_t batch_probes() { return g_probes.load(); }

void set_batch_probe_says_no(bool no) { g_probe_says_no.store(no); }

void forget_batch_probes() {
  std::lock_guard<std::mutex> lock(g_answers_mu);
  g_answers.clear();
}

int64_t batched_product_runs() { return g_batched_runs.load(); }
int64_t blocked_product_runs() { return g_blocked_runs.load(); }

std::vector<ProductBatch> find_product_batches(const tracer::Graph& g, std::vector<Step>& steps) {
  std::vector<ProductBatch> batches;
  if (!config().jit_batch_products) return batches;
  std::vector<const tracer::ValueMeta*> input_meta(static_cast<size_t>(g.num_values()), nullptr);
  for (const tracer::GraphInput& in : g.inputs) input_meta[in.id] = &in.meta;
  std::vector<uint8_t> is_output(static_cast<size_t>(g.num_values()), 0);
  for (ValueId v : g.outputs) is_output[v] = 1;
  // Members by right operand and recorded left sizes, in plan order.
  std::map<std::pair<ValueId, std::pair<int64_t, int64_t>>, std::vector<int32_t>> groups;
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& st = steps[s];
    if (!st.blas) continue;
    const tracer::Node& n = g.nodes[st.node];
    const tracer::ValueMeta* a = n.inputs.size() == 2 ? input_meta[n.inputs[0]] : nullptr;
    if (!a || is_output[n.output] || a->sizes.size() != 2 || a->sizes[0] < 2) continue;
    if (n.meta.dtype != DType::Float32 && n.meta.dtype != DType::Float64) continue;
    groups[{n.inputs[1], {a->sizes[0], a->sizes[1]}}].push_back(static_cast<int32_t>(s));
  }
  for (auto& [key, members] : groups)
    if (members.size() >= 2) batches.push_back({std::move(members)});
  // Batch indices in the order of their first steps (a plan's text lists them so).
  std::sort(batches.begin(), batches.end(),
            [](const ProductBatch& x, const ProductBatch& y) { return x.steps[0] < y.steps[0]; });
  for (size_t b = 0; b < batches.size(); ++b)
    for (int32_t s : batches[b].steps) steps[s].batch = static_cast<int32_t>(b);
  return batches;
}

namespace {

// The n products as eager computes each, all in one parallel loop: its row or column blocks
// (blas::plan_split_2d), or its one call where that call runs on one OpenBLAS thread
// (threads_for): the very calls, so the very bits, without a fork and a join per product (and
// small products, which eager runs one after another, side by side). Undefined where eager
// gives each product OpenBLAS's own threads.
Tensor blocked_products(const Tensor& stacked, int64_t n, const Tensor& b) {
  const TensorImpl *a = stacked.impl(), *bt = b.impl();
  const DType dt = a->dtype();
  const int64_t M = a->sizes()[0] / n, K = a->sizes()[1], N = bt->sizes()[1];
  const int64_t row_stride = a->strides()[0];
  const Tensor first = row_view(stacked, M, K, row_stride, a->offset());
  const blas::Split2d split = blas::plan_split_2d(first.impl(), bt, dt);
  const blas::WholeGemm whole = blas::plan_whole_gemm(first.impl(), bt, dt);
  const int64_t blocks = split.blocks();
  if (blocks < 2 && (!whole.ok || blas::threads_for(M, N, K) != 1)) return {};
  try {
    Tensor product = empty_tensor({n * M, N}, dt, Device::cpu());
    const auto* A = static_cast<const char*>(a->data());
    const auto* B = static_cast<const char*>(bt->data());
    auto* C = static_cast<char*>(product.impl()->data());
    const int64_t item = static_cast<int64_t>(itemsize(dt)), per = std::max<int64_t>(blocks, 1);
    blas::set_threads(1);
    parallel_for(0, n * per, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const char* At = A + (i / per) * M * row_stride * item;
        char* Ct = C + (i / per) * M * N * item;
        if (blocks >= 2) {
          split.block(i % per, reinterpret_cast<const float*>(At),
                      reinterpret_cast<const float*>(B), reinterpret_cast<float*>(Ct));
        } else if (dt == DType::Float32) {
          blas::gemm<float>(whole.la, whole.lb, M, N, K, reinterpret_cast<const float*>(At),
                            reinterpret_cast<const float*>(B), reinterpret_cast<float*>(Ct));
        } else {
          blas::gemm<double>(whole.la, whole.lb, M, N, K, reinterpret_cast<const double*>(At),
                             reinterpret_cast<const double*>(B), reinterpret_cast<double*>(Ct));
        }
      }
    });
    g_blocked_runs.fetch_add(1, std::memory_order_relaxed);
    return product;
  } catch (const Error&) {  // no memory for the batch: the products run one by one
    return {};
  }
}

}  // namespace

Tensor stacked_product(const Tensor& stacked, int64_t n, const Tensor& b) {
  const TensorImpl *a = stacked.impl(), *bt = b.impl();
  const DType dt = a->dtype();
  if ((dt != DType::Float32 && dt != DType::Float64) || bt->dtype() != dt || a->dim() != 2 ||
      bt->dim() != 2 || !a->device().is_cpu() || !bt->device().is_cpu() || n < 2)
    return {};
  const int64_t rows = a->sizes()[0], K = a->sizes()[1], N = bt->sizes()[1];
  if (rows % n != 0 || rows / n < 2 || bt->sizes()[0] != K || K < 1 || N < 1) return {};
  if (rows * N * static_cast<int64_t>(itemsize(dt)) > kMaxBatchBytes) return {};
  const blas::Layout lb = blas::layout(K, N, bt->strides()[0], bt->strides()[1]);
  if (!lb.ok) return {};
  if (!batch_keeps_bits({dt, n, rows / n, N, K, lb.trans, num_threads(), in_parallel_region()}))
    return blocked_products(stacked, n, b);
  try {
    Tensor product = empty_tensor({rows, N}, dt, Device::cpu());
    if (!blas::gemm_2d(a, bt, product.impl())) return {};
    g_batched_runs.fetch_add(1, std::memory_order_relaxed);
    return product;
  } catch (const Error&) {  // no memory for the batch: the products run one by one
    return {};
  }
}

Tensor rows_of(const Tensor& product, int64_t t, int64_t M) {
  const int64_t N = product.impl()->sizes()[1];
  return row_view(product, M, N, N, t * M * N);
}

Tensor row_view(const Tensor& base, int64_t rows, int64_t cols, int64_t row_stride,
                int64_t offset) {
  return view_of(base, {rows, cols}, {row_stride, 1}, offset);
}

void JitPlan::run_product_batch(Frame& f, int32_t bi) {
  const ProductBatch& pb = batches_[bi];
  const int64_t n = static_cast<int64_t>(pb.steps.size());
  const tracer::Node& first = graph_.nodes[steps_[pb.steps[0]].node];
  if (f.any_poisoned(first.inputs)) return;
  const Tensor& a0t = f.values[first.inputs[0]];
  const TensorImpl* a0 = a0t.impl();
  if (a0->dim() != 2 || (a0->sizes()[1] > 1 && a0->strides()[1] != 1)) return;
  const int64_t M = a0->sizes()[0], K = a0->sizes()[1], row_stride = a0->strides()[0];
  if (M < 2 || row_stride < K) return;
  // This run's left operands: row slices of one storage, M rows apart, each slot once.
  int64_t base = a0->offset();
  for (int32_t s : pb.steps)
    base = std::min(base, f.values[graph_.nodes[steps_[s].node].inputs[0]].impl()->offset());
  SmallVector<int64_t, 8> slot;
  std::vector<uint8_t> taken(static_cast<size_t>(n), 0);
  for (int32_t s : pb.steps) {
    const TensorImpl* a = f.values[graph_.nodes[steps_[s].node].inputs[0]].impl();
    if (a->storage() != a0->storage() || a->dtype() != a0->dtype() || a->sizes() != a0->sizes() ||
        a->strides() != a0->strides())
      return;
    const int64_t d = a->offset() - base;
    if (d % (M * row_stride) != 0 || d / (M * row_stride) >= n || taken[d / (M * row_stride)])
      return;
    slot.push_back(d / (M * row_stride));
    taken[static_cast<size_t>(slot.back())] = 1;
  }
  const Tensor product =
      stacked_product(row_view(a0t, n * M, K, row_stride, base), n, f.values[first.inputs[1]]);
  if (!product.defined()) return;
  for (size_t i = 0; i < pb.steps.size(); ++i)
    f.values[graph_.nodes[steps_[pb.steps[i]].node].output] = rows_of(product, slot[i], M);
}

}  // namespace kiln::jit
