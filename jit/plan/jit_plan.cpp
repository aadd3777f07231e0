#include "jit/plan/jit_plan.h"

#include "jit/plan/plan_frame.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>

#include "ops/meta_helpers.h"
#include "ops/random.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/profiler.h"
#include "tracer/hop_interpreter.h"

namespace kiln::jit {

using tracer::Graph;
using tracer::Node;
using tracer::ValueId;

Scalar philox_word(const tracer::RunArgs& args, int32_t param) {
  const int32_t code = -param - 1;
  const tracer::PhiloxWords& w = args.random[static_cast<size_t>(code / 4)];
  const uint64_t v = code % 4 < 2 ? w.seed : w.counter;
  return Scalar(static_cast<int64_t>(code % 2 == 0 ? v & 0xffffffffu : v >> 32));
}

JitPlan::JitPlan(Graph g, std::vector<Step> steps, std::vector<std::vector<EagerPatch>> patches,
                 std::vector<int32_t> random_index)
    : graph_(std::move(g)),
      steps_(std::move(steps)),
      patches_(std::move(patches)),
      random_index_(std::move(random_index)) {
  bodies_ = tracer::body_plans_of(graph_);
  last_step_.assign(static_cast<size_t>(graph_.num_values()), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    if (st.kernel) {
      for (ValueId v : st.kernel->inputs) last_step_[v] = static_cast<int32_t>(s);
    } else {
      for (ValueId v : graph_.nodes[st.node].inputs) last_step_[v] = static_cast<int32_t>(s);
    }
  }
  for (ValueId v : graph_.outputs) last_step_[v] = -2;
  for (Step& st : steps_)
    if (st.kernel) find_dying(*st.kernel);
  invariant_products_ = find_invariant_products(graph_, steps_);
  // A graph input's old contents are read until the last read of it or of any view of it.
  std::vector<int32_t> root(static_cast<size_t>(graph_.num_values()), -1);  // input number
  for (size_t i = 0; i < graph_.inputs.size(); ++i)
    root[graph_.inputs[i].id] = static_cast<int32_t>(i);
  input_last_step_.assign(graph_.inputs.size(), -1);
  auto note = [&](int32_t i, int32_t last) {
    int32_t& l = input_last_step_[i];
    l = (l == -2 || last == -2) ? -2 : std::max(l, last);
  };
  for (size_t i = 0; i < graph_.inputs.size(); ++i)
    note(static_cast<int32_t>(i), last_step_[graph_.inputs[i].id]);
  // Buffers a step may take over: values of nodes that allocate their result (not graph inputs,
  // views of another buffer, or what a higher-order node passes through).
  donor_ok_.assign(static_cast<size_t>(graph_.num_values()), 0);
  for (const Node& n : graph_.nodes)
    donor_ok_[n.output] = !(op_def(n.op).flags & (kIsView | kHigherOrder));
  for (const Node& n : graph_.nodes) {
    const uint32_t flags = op_def(n.op).flags;
    if (flags & kHigherOrder) {  // bodies may pass inputs through: never write in place
      for (size_t i = 0; i < graph_.inputs.size(); ++i) note(static_cast<int32_t>(i), -2);
      break;
    }
    if ((flags & kIsView) && root[n.inputs[0]] >= 0) {
      root[n.output] = root[n.inputs[0]];
      note(root[n.output], last_step_[n.output]);
    }
  }
}

int JitPlan::num_kernels() const {
  int n = 0;
  for (const Step& s : steps_) n += s.kernel != nullptr;
  return n;
}

int JitPlan::num_body_plans() const {
  std::vector<const tracer::RegionPlan*> seen;
  for (const auto& per_node : body_plans_)
    for (const auto& p : per_node)
      if (p && std::find(seen.begin(), seen.end(), p.get()) == seen.end()) seen.push_back(p.get());
  return static_cast<int>(seen.size());
}

int JitPlan::num_eager_steps() const { return static_cast<int>(steps_.size()) - num_kernels(); }

Tensor JitPlan::destination_for(const Frame& f, ValueId v, int32_t step_index,
                                const DimVector& sizes, DType dtype) const {
  if (!f.use_destinations || f.args.destinations.empty() || step_index < 0) return {};
  for (size_t o = 0; o < graph_.outputs.size() && o < f.args.destinations.size(); ++o) {
    if (graph_.outputs[o] != v) continue;
    const Tensor& d = f.args.destinations[o];
    if (!d.defined() || d.impl()->dtype() != dtype || d.impl()->sizes() != sizes) return {};
    int uses = 0;
    for (ValueId w : graph_.outputs) uses += w == v;
    if (uses != 1) return {};
    for (size_t i = 0; i < graph_.inputs.size(); ++i) {
      const TensorImpl* in = f.args.inputs[i].impl();
      if (in->storage() != d.impl()->storage()) continue;
      const int32_t last = input_last_step_[i];
      if (last == -2 || last > step_index) return {};
      if (last == step_index && !same_geometry(in, d.impl())) return {};
    }
    return d;
  }
  return {};
}

bool JitPlan::donatable(const Frame& f, ValueId v, int32_t step_index, const DimVector& sizes,
                        DType dtype, int32_t extra_handles) const {
  if (step_index < 0 || last_step_[v] != step_index) return false;
  return buffer_free(f, v, sizes, dtype, extra_handles);
}

bool JitPlan::buffer_free(const Frame& f, ValueId v, const DimVector& sizes, DType dtype,
                          int32_t extra_handles) const {
  if (!donor_ok_[v]) return false;
  const Tensor& t = f.values[v];
  if (!t.defined()) return false;
  const TensorImpl* ti = t.impl();
  return ti->dtype() == dtype && ti->sizes() == sizes && ti->is_contiguous() &&
         ti->use_count() == 1 + extra_handles && ti->storage()->use_count() == 1 &&
         !ti->storage()->is_lazy() && ti->autograd() == nullptr && ti->numel() > 0;
}

JitPlan* JitPlan::loop_body_plan(int32_t j) const {
  const Node& n = graph_.nodes[j];
  if ((n.op != OpId::Scan && n.op != OpId::Map) || j >= static_cast<int32_t>(body_plans_.size()) ||
      body_plans_[j].empty())
    return nullptr;
  auto* body = dynamic_cast<JitPlan*>(body_plans_[j][0].get());
  return body && !body->invariant_products().empty() ? body : nullptr;
}

void JitPlan::run_eager_node(Frame& f, int32_t j, int32_t step_index,
                             std::span<const ValueId> dying) {
  const Node& n = graph_.nodes[j];
  if (f.any_poisoned(n.inputs)) {
    f.poison(n.output);
    return;
  }
  try {
    // The inputs: up to 4 without an allocation (views, unary and binary ops).
    std::array<Tensor, 4> few;
    std::vector<Tensor> many;
    if (n.inputs.size() > few.size()) many.resize(n.inputs.size());
    Tensor* ins = many.empty() ? few.data() : many.data();
    for (size_t i = 0; i < n.inputs.size(); ++i) ins[i] = f.values[n.inputs[i]];
    const std::span<const Tensor> in(ins, n.inputs.size());
    // With this run's promoted scalars and Philox words (a copy only where it has some).
    std::optional<Attrs> patched;
    if (!patches_[j].empty() || random_index_[j] >= 0) {
      patched.emplace(n.attrs);
      for (const EagerPatch& p : patches_[j])
        patched->scalars[p.scalar_index] = f.args.scalars[p.run_scalar];
      if (random_index_[j] >= 0) {
        const tracer::PhiloxWords& w = f.args.random[random_index_[j]];
        set_philox(*patched, w.seed, w.counter);
      }
    }
    const Attrs& attrs = patched ? *patched : n.attrs;
    const OpDef& def = op_def(n.op);
    if (def.flags & kHigherOrder) {
      if (f.tuples.empty()) f.tuples.resize(f.values.size());
      std::optional<std::vector<Tensor>> done;  // a scan or map with products before its loop
      if (JitPlan* body = loop_body_plan(j)) done = run_loop_with_products(n, *body, in);
      if (n.op == OpId::TupleGet)
        f.values[n.output] = f.tuples[n.inputs[0]].at(static_cast<size_t>(n.attrs.ints[0]));
      else if (done)
        f.tuples[n.output] = std::move(*done);
      else if (j < static_cast<int32_t>(body_plans_.size()) && !body_plans_[j].empty())
        f.tuples[n.output] = tracer::run_hop_node(
            n,
            [&](size_t k, std::vector<Tensor> a) {
              tracer::InterpretResult r;
              if (tracer::RegionPlan* p = body_plans_[j][k].get()) {
                tracer::RunArgs ra;
                ra.inputs = a;
                r = p->run(ra);
              } else {
                r = tracer::interpret(n.subgraphs[k], tracer::body_plans(bodies_, j)[k], a);
              }
              if (r.error) std::rethrow_exception(r.error);
              return std::move(r.outputs);
            },
            in);
      else
        f.tuples[n.output] = tracer::run_hop_node(n, tracer::body_plans(bodies_, j), in);
      return;
    }
    const OpCall call{n.op, in, attrs};
    OutputMeta m;  // from the actual inputs: this recording's sizes
    def.meta(call, m);
    // Like the interpreter: an elementwise op writes into its output's destination, or into an
    // input that dies here (its buffer is then the output's), instead of a new buffer.
    if ((def.flags & kWritesAnyLayout) && !(def.flags & kIsView) && m.strides.empty()) {
      Tensor out = destination_for(f, n.output, step_index, m.sizes, m.dtype);
      for (size_t k = 0; !out.defined() && k < n.inputs.size(); ++k) {
        int32_t uses = 0;
        for (ValueId u : n.inputs) uses += u == n.inputs[k];
        const bool dies = std::find(dying.begin(), dying.end(), n.inputs[k]) != dying.end();
        if (dies ? buffer_free(f, n.inputs[k], m.sizes, m.dtype, uses)
                 : donatable(f, n.inputs[k], step_index, m.sizes, m.dtype, uses))
          out = ins[k];
      }
      if (out.defined()) {
        def.eager(call, out);
        f.values[n.output] = std::move(out);
        return;
      }
    }
    f.values[n.output] = run_eager(def, call, m);
  } catch (...) {
    const ValueId out[] = {n.output};
    f.fail(out);
  }
}

namespace {

// Byte strides of `t` read over the index space `sizes` (right-aligned broadcasting).
DimVector broadcast_strides(const TensorImpl* t, const DimVector& sizes, int64_t esize) {
  DimVector s(sizes.size(), 0);
  const size_t r = t->sizes().size(), R = sizes.size();
  for (size_t d = 0; d < r; ++d) {
    const size_t od = R - r + d;
    s[od] = t->sizes()[d] == 1 && sizes[od] != 1 ? 0 : t->strides()[d] * esize;
  }
  return s;
}

}  // namespace

void JitPlan::run_kernel(Frame& f, KernelStep& k, size_t step_index) {
  KernelLaunch& kl = f.launch;  // no allocation per step: its vectors keep their room
  kl.clear();
  if (prepare_kernel(f, k, step_index, kl)) finish_kernel(f, k, kl, launch_kernel(f, k, kl.la));
  kl.clear();  // no handle to this step's buffers lingers (donation counts them)
}

// A kernel step's nodes run eagerly (run_nodes_eagerly): each value that only they read (no
// later step, not a graph output: last_step_ -1; not one of the kernel's outputs) dies at its
// last reader there. An elementwise reader may write its result into it (as the interpreter
// does with a value dying at a step), and it is dropped after, as eager mode drops a temporary.
// Held to the step's end, newton's declined step (7 nodes over 2^20 floats, docs/jit.md) wrote
// every node's result to a fresh buffer, 20% slower than eager on the 16-core GPU host. Found
// once per plan.
void JitPlan::find_dying(KernelStep& k) const {
  // Each value's last reader among the kernel's nodes (one pass: a scan of the later nodes per
  // input was quadratic, a sixth of planning a 1000-add region); a kernel output never dies.
  std::vector<int32_t> last_reader(static_cast<size_t>(graph_.num_values()), -1);
  for (size_t i = 0; i < k.nodes.size(); ++i)
    for (ValueId v : graph_.nodes[k.nodes[i]].inputs) last_reader[v] = static_cast<int32_t>(i);
  for (ValueId v : k.outputs) last_reader[v] = -1;
  k.dying.assign(k.nodes.size(), {});
  for (size_t i = 0; i < k.nodes.size(); ++i)
    for (ValueId v : graph_.nodes[k.nodes[i]].inputs) {
      std::vector<ValueId>& d = k.dying[i];
      if (last_reader[v] != static_cast<int32_t>(i) || last_step_[v] != -1 ||
          std::find(d.begin(), d.end(), v) != d.end())
        continue;
      d.push_back(v);
    }
}

void JitPlan::run_nodes_eagerly(Frame& f, const KernelStep& k) {
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    run_eager_node(f, k.nodes[i], -1, k.dying[i]);
    for (ValueId v : k.dying[i]) f.values[v] = Tensor();
  }
}

bool JitPlan::prepare_kernel(Frame& f, KernelStep& k, size_t step_index, KernelLaunch& kl,
                             bool fallback) {
  if (k.broken.load(std::memory_order_relaxed)) {
    run_nodes_eagerly(f, k);
    return false;
  }
  if (f.any_poisoned(k.inputs)) {
    for (ValueId v : k.outputs) f.poison(v);
    return false;
  }
  const LoopKernel& src = k.kernel->source();
  LaunchArgs& la = kl.la;
  std::vector<Tensor>& outs = kl.outs;
  try {
    la.sizes = k.sizes;
    for (ValueId v : k.inputs)
      la.sizes = broadcast_shapes("jit kernel", la.sizes, f.values[v].impl()->sizes());
    if (!k.kernel->may_launch(la.sizes, k.reduced_dims, k.inner_dims)) {  // before any buffer
      if (fallback) run_nodes_eagerly(f, k);
      return false;
    }
    outs.reserve(k.outputs.size());
    la.strides.reserve(k.outputs.size() + k.inputs.size());
    la.reduced_dims = k.reduced_dims;
    la.inner_dims = k.inner_dims;
    SmallVector<ValueId, 8> donated;
    for (size_t ko = 0; ko < k.outputs.size(); ++ko) {
      const ValueId v = k.outputs[ko];
      const DType dtype = src.output_dtype(static_cast<int32_t>(ko));
      const uint8_t row = k.row_output.empty() ? 0 : k.row_output[ko];
      if (row != 0) {  // one value per row: the kept dims, 0 over the reduced ones
        const size_t rank = la.sizes.size();
        const size_t r1 = rank - static_cast<size_t>(k.inner_dims);  // reduced: [r0, r1)
        const size_t r0 = r1 - static_cast<size_t>(k.reduced_dims);
        DimVector sizes;
        for (size_t d = 0; d < rank; ++d)
          if (d < r0 || d >= r1)
            sizes.push_back(la.sizes[d]);
          else if (row == 1)
            sizes.push_back(1);
        Tensor out = destination_for(f, v, static_cast<int32_t>(step_index), sizes, dtype);
        if (!out.defined()) out = empty_tensor(sizes, dtype, Device::cpu());
        DimVector st(rank, 0);
        for (size_t d = 0, od = 0; d < rank; ++d) {
          const bool reduced = d >= r0 && d < r1;
          if (!reduced) st[d] = out.impl()->strides()[od] * static_cast<int64_t>(itemsize(dtype));
          if (!reduced || row == 1) ++od;
        }
        la.ptrs.push_back(static_cast<char*>(out.impl()->data()));
        la.strides.push_back(st);
        outs.push_back(std::move(out));
        continue;
      }
      Tensor out = destination_for(f, v, static_cast<int32_t>(step_index), la.sizes, dtype);
      // Else the buffer of an input that dies at this kernel: it reads each element before it
      // writes the same element of the output, so computing in place is safe.
      for (size_t j = 0; !out.defined() && j < k.inputs.size(); ++j) {
        const ValueId w = k.inputs[j];
        if (std::find(donated.begin(), donated.end(), w) != donated.end()) continue;
        if (donatable(f, w, static_cast<int32_t>(step_index), la.sizes, dtype, 0)) {
          out = f.values[w];
          donated.push_back(w);
        }
      }
      if (!out.defined()) out = empty_tensor(la.sizes, dtype, Device::cpu());
      la.ptrs.push_back(static_cast<char*>(out.impl()->data()));
      la.strides.push_back(broadcast_strides(out.impl(), la.sizes, itemsize(dtype)));
      outs.push_back(std::move(out));
    }
    for (ValueId v : k.inputs) {
      const TensorImpl* t = f.values[v].impl();
      la.ptrs.push_back(static_cast<char*>(t->data()));
      la.strides.push_back(broadcast_strides(t, la.sizes, itemsize(t->dtype())));
    }
    for (int32_t p : k.params)
      kl.params.push_back(p >= 0 ? f.args.scalars[p] : philox_word(f.args, p));
    la.params = std::span<const Scalar>(kl.params.data(), kl.params.size());
  } catch (...) {
    if (fallback) f.fail(k.outputs);
    return false;
  }
  return true;
}

JitPlan::Launched JitPlan::launch_kernel(Frame& f, KernelStep& k, const LaunchArgs& la) {
  try {
    // Declined: a row strided in this run (CompiledKernel::can_launch): its nodes run eagerly.
    return k.kernel->try_launch(la) ? Launched::Yes : Launched::Declined;
  } catch (const Error& e) {  // no machine code for this layout: these nodes run eagerly
    if (!k.broken.exchange(true))
      KILN_WARN(Jit, "a fused kernel of {} ops failed to launch; they run eagerly: {}",
                k.nodes.size(), e.what());
  } catch (...) {
    f.fail(k.outputs);
  }
  return Launched::No;
}

void JitPlan::finish_kernel(Frame& f, KernelStep& k, KernelLaunch& kl, Launched launched) {
  if (launched == Launched::Declined) {
    kl.outs.clear();  // no buffer of this launch stays held (donation counts the handles)
    run_nodes_eagerly(f, k);
    return;
  }
  if (launched == Launched::No) {
    if (k.broken.load(std::memory_order_relaxed)) run_nodes_eagerly(f, k);
    return;
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) f.values[k.outputs[o]] = std::move(kl.outs[o]);
}

tracer::InterpretResult JitPlan::run(const tracer::RunArgs& args) {
  if (!arg_map_) return run_mapped(args);
  passes::ArgMap::Storage storage;
  return run_mapped(arg_map_->map(args, storage));
}

tracer::InterpretResult JitPlan::run_with_products(
    const tracer::RunArgs& args, std::span<const std::pair<ValueId, Tensor>> products) {
  if (!arg_map_) return run_mapped(args, products);
  passes::ArgMap::Storage storage;
  return run_mapped(arg_map_->map(args, storage), products);
}

Tensor JitPlan::invariant_operand(const InvariantProduct& c, const tracer::RunArgs& args) {
  passes::ArgMap::Storage storage;
  const tracer::RunArgs mapped = arg_map_ ? arg_map_->map(args, storage) : args;
  Frame f{.args = mapped,
          .use_destinations = false,
          .values = std::vector<Tensor>(static_cast<size_t>(graph_.num_values()))};
  const ValueId root = graph_.inputs[c.right_input].id;
  f.values[root] = mapped.inputs[c.right_input];
  for (int32_t j : c.right_nodes) run_eager_node(f, j);
  if (f.error) std::rethrow_exception(f.error);
  return f.values[c.right_nodes.empty() ? root : graph_.nodes[c.right_nodes.back()].output];
}

tracer::InterpretResult JitPlan::run_mapped(const tracer::RunArgs& args,
                                            std::span<const std::pair<ValueId, Tensor>> given) {
  KILN_CHECK(args.inputs.size() == graph_.inputs.size(), "jit plan: {} inputs, the graph has {}",
             args.inputs.size(), graph_.inputs.size());
  Frame f{.args = args,
          .use_destinations = true,
          .values = std::vector<Tensor>(static_cast<size_t>(graph_.num_values()))};
  for (size_t i = 0; i < args.inputs.size(); ++i) f.values[graph_.inputs[i].id] = args.inputs[i];
  for (const auto& [v, t] : given) f.values[v] = t;  // products computed before (BLAS steps)
  for (size_t s = 0; s < steps_.size(); ++s) {
    Step& st = steps_[s];
    const size_t first = s;
    if (st.gathered) {
      s += run_gathered(f, s);  // 1: the row kernel after it ran too
    } else if (st.kernel) {
      run_kernel(f, *st.kernel, s);
    } else {
      const int64_t t0 = profiler::enabled() ? profiler::now_ns() : 0;
      if (st.blas)
        s += run_blas(f, s);  // 1: it ran its epilogue, the next step, too
      else
        run_eager_node(f, st.node, static_cast<int32_t>(s));
      if (t0 != 0)
        profiler::record_plan_step(st.blas ? "blas" : "eager", op_name(graph_.nodes[st.node].op),
                                   t0, profiler::now_ns());
    }
    for (size_t r = first; r <= s; ++r)
      for (ValueId v : steps_[r].release) {
        f.values[v] = Tensor();
        if (!f.tuples.empty()) f.tuples[v].clear();
      }
  }
  tracer::InterpretResult result;
  result.error = f.error;
  result.outputs.reserve(graph_.outputs.size());
  for (ValueId v : graph_.outputs) result.outputs.push_back(f.values[v]);
  return result;
}

tracer::InterpretResult JitPlan::run_reference(const tracer::RunArgs& args) {
  if (arg_map_) return arg_map_->run_original(args);
  Frame f{.args = args,
          .use_destinations = false,
          .values = std::vector<Tensor>(static_cast<size_t>(graph_.num_values()))};
  for (size_t i = 0; i < args.inputs.size(); ++i) f.values[graph_.inputs[i].id] = args.inputs[i];
  for (size_t j = 0; j < graph_.nodes.size(); ++j) run_eager_node(f, static_cast<int32_t>(j));
  tracer::InterpretResult result;
  result.error = f.error;
  for (ValueId v : graph_.outputs) result.outputs.push_back(f.values[v]);
  return result;
}

}  // namespace kiln::jit
