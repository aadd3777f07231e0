#!/usr/bin/env bash
# Mutation check (on demand, not in CI; docs/testing.md): applies each deliberate breakage of
# issue 16 to a scratch copy of the working tree, rebuilds kiln-tests incrementally, runs the tests
# that should catch it, and reports FAIL-as-expected (the suite caught it) or SURVIVED.
#   tests/mutations/run.sh [scratch-dir]     (default /tmp/kiln-mutations; KILN_MUTATION_JOBS=2)
set -uo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
scratch="${1:-/tmp/kiln-mutations}"
jobs="${KILN_MUTATION_JOBS:-2}"
tree="$scratch/tree"
mkdir -p "$tree"
# The working tree's tracked and untracked (not ignored) files, uncommitted edits included.
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
  xargs -0 cp --parents -t "$tree" 2>/dev/null)
cd "$tree"
cmake --preset release >"$scratch/configure.log" 2>&1 || { echo "configure failed"; exit 2; }

# name | file | old text | new text | test filter | extra env
mutations=(
  "abs backward -> pass-through|ops/pointwise_backward.cpp|      r = gy * sign(x);|      r = gy;|Autograd*.*|"
  "relu backward -> pass-through|ops/pointwise_backward.cpp|      r = where(y > 0.0, gy, zeros_like(gy));|      r = gy;|Autograd*.*|"
  "clamp backward -> pass-through|ops/pointwise_backward.cpp|      r = where(inside, gy, zeros_like(gy));|      r = gy;|Autograd*.*|"
  "floor backward -> pass-through|ops/pointwise_backward.cpp|    case OpId::Floor:\n    case OpId::Ceil:|    case OpId::Floor:\n      r = gy;\n      break;\n    case OpId::Ceil:|Autograd*.*|"
  "sign backward -> pass-through|ops/pointwise_backward.cpp|    case OpId::Sign:\n      r = zeros_like(gy);|    case OpId::Sign:\n      r = c.op == OpId::Sign ? gy : zeros_like(gy);|Autograd*.*|"
  "Float32 var without Bessel for n > 500|ops/cpu/reduce_kernels.cpp|\n  const T denom = static_cast<T>(n - (unbiased ? 1 : 0));|\n  const T denom = static_cast<T>(n - (unbiased \&\& !(sizeof(T) == 4 \&\& n > 500) ? 1 : 0));|Reduce*.*|"
  "eager lane ignores KILN_JIT|runtime/eager_lane.h|!cfg_->jit |false |EagerTierTest.*|"
  "eager lane ignores KILN_JIT_EAGER_TIER|runtime/eager_lane.h|!cfg_->jit_eager_tier |false |EagerTierTest.*|"
  "eager lane ignores pending work|runtime/eager_lane.h|pending_->load(std::memory_order_relaxed))|false)|EagerTierTest.*|"
  "lane memo ignores sizes|runtime/lane_meta_memo.h|if (sizes[d] != dims[d]|if (false|LaneMetaMemo.*:EagerTierTest.*|"
  "same_bits ignores scalars' bits|runtime/attrs.h|(a.scalars[k].bits() ^ b.scalars[k].bits())|uint64_t{0}|LaneMetaMemo.*|"
  "lane memo never answers|runtime/lane_meta_memo.h|    if (!entries_) return nullptr;|    return nullptr;|EagerTierTest.TheLane*|"
  "lane memo's answer not handed to the recorder|runtime/dispatcher.cpp|    if (m != &meta) meta = *m;|    (void)0;|EagerTierTest.*|"
  "lane memo answers views|runtime/dispatcher.cpp|  if (lane != nullptr \&\& !(def.flags \& kIsView)) {|  if (lane != nullptr) {|EagerTierTest.*|"
  "lane memo's place ignores the interval before|runtime/eager_lane.h| ^ before * 0xff51afd7ed558ccdull)| ^ 0)|EagerTierTest.TheLane*|"
  "cpu row kernels reject Int32 row values|jit/cpu/row_renderer.cpp|  for (int32_t j = 0; j < k_.num_outputs(); ++j) elem_store_[j] = !row_[k_.stores[j]];|  for (int32_t j = 0; j < k_.num_outputs(); ++j) {\n    elem_store_[j] = !row_[k_.stores[j]];\n    KILN_CHECK(!(!elem_store_[j] \&\& k_.output_dtype(j) == DType::Int32), \"mutation\");\n  }|JitReducePlanTest.RowValuesCastToInt32*|"
  "masked_fill of a Bool converts its value as an Int32|jit/lower/lowering.cpp|k.constant_int(n.attrs.scalars[static_cast<size_t>(i)].to<bool>() ? 1 : 0, kBoolVia);|k.constant_int(n.attrs.scalars[static_cast<size_t>(i)].to<int32_t>(), kBoolVia);|JitBoolArithmeticTest.*|"
  "integer products start from 1.0's bits|jit/cpu/reduce_ops.h|      return integer ? o.isplat(1) : o.splat(1.0);|      return o.splat(1.0);|JitReducePlanTest.IntegerProducts*|"
  "integer products multiply as floats|jit/cpu/reduce_ops.h|      return integer ? o.imul(a, b) : o.mul(a, b);|      return o.mul(a, b);|JitReducePlanTest.IntegerProducts*|"
  "unrolled drawing copies share the first index|jit/cpu/body_emitter.h|        if (first_ != 0) {|        if (false) {|JitUnroll.Drawing*|"
  "exps of x - amax(x) keep the clamp|jit/cpu/math.cpp|    if (op_of(i) == ExprOp::ReduceMax) return true;|    if (op_of(i) == ExprOp::ReduceMax) return false;|JitExpDense.ExpOfMasked*|"
  "a constant exponent's odd class inverted|ops/cpu/vecmath/pow.h|  e.yodd = e.yint \&\& ay < 2|  e.yodd = !e.yint \&\& ay < 2|JitPow.*|"
  "four-counter Philox's word 1 taken from word 3|runtime/philox_block.h|out.r1.data()), join(w1));|out.r1.data()), join(w3));|Philox.*:Random.*|"
  "JIT Philox's high word from the other product|jit/cpu/philox_emitter.h|      w0[h] = o.bit_xor(o.bit_xor(shift64(false, p1, 32), w1[h]), k0);|      w0[h] = o.bit_xor(o.bit_xor(shift64(false, p0, 32), w1[h]), k0);|JitRandom.*|"
  "an in-place accumulator update writes the vector it reads|jit/cpu/vec_emitter.h|  void arith_to(const Quad\& q, F d, F b) const { emit3(pick(q), pick(q), d, d, b); }|  void arith_to(const Quad\& q, F d, F b) const { emit3(pick(q), pick(q), b, d, b); }|JitReduceKernels.*|"
  "64-bit row values join 32-bit row kernels|jit/plan/planner.cpp|    if (itemsize(n.meta.dtype) == 8 \&\& !has_64bit(grp)) return false;\n|\n|JitReducePlanTest.CrossEntropyOp*|"
  "row passes never reordered|jit/loop/row_pass_order.cpp|  if (reduces_before == reduces_after) return k;|  return k;|JitReduceKernels.CheapReducesGoFirst*|"
  "argmax of a softmax joins its row kernel|jit/plan/planner.cpp|n.op == OpId::Argmin) \&\& inner == 0 \&\& step_of[x] == s|n.op == OpId::Argmin) \&\& false \&\& step_of[x] == s|JitReducePlanTest.ArgmaxOfASoftmax*|"
  "a leaf reduced once is gathered by a copy step|jit/passes/gathered_rows.cpp|readers(n.inputs[0], mask) < 2|readers(n.inputs[0], mask) < 1|JitColumnPlanTest.ALeafReducedOnce*|"
  "exp<true>'s folded last step merges instead of zeroing|jit/cpu/vec_emitter.h|    cc_.k(m.k).z().emit(kDouble ? asmjit::x86::Inst::kIdVscalefpd|    cc_.k(m.k).emit(kDouble ? asmjit::x86::Inst::kIdVscalefpd|JitExpDense.ExpOfMasked*|"
  "a transposed gather tile reads the wrong element|ops/cpu/reduce_plan.cpp|buf[i][c] = q[i];|buf[i][c] = q[i / 2];|Reduce.Transposed*|"
  "an expanded row is no broadcast|jit/plan/planner.cpp|    bool expanded = true;|    bool expanded = false;|JitReducePlanTest.ExpandedGradients*|"
  "unsqueezed row values are no row values|jit/plan/planner.cpp|    return grp.inner_dims == 0 \&\& grp.is_row(n.inputs[0]) \&\& grp.row_shape(n.meta.sizes) ? s : -1;|    return -1;|JitReducePlanTest.ExpandedGradients*|"
  "nodes over an expand are not lifted|jit/passes/broadcast_operands.cpp|    if (!lift) {|    if (true) {|JitPassesTest.Expands*:JitReducePlanTest.ExpandedGradients*|"
  "drafts never move up|jit/plan/planner.cpp|  auto move_up = [\&](int32_t t, ValueId v) {|  auto move_up = [\&](int32_t t, ValueId v) {\n    if (t >= 0) return false;|JitReducePlanTest.SmallValuesComputedLater*|"
  "column kernels take integer sums beside float ones|jit/plan/planner.cpp|      return std::all_of(grp.row_vals.begin(), grp.row_vals.end(),|      return grp.nodes.size() + 1 > 0 ? true : std::all_of(grp.row_vals.begin(), grp.row_vals.end(),|JitColumnPlanTest.ColumnReductionsOfOtherInputs*|"
  "row nodes read no row loads|jit/plan/planner.cpp|    if (vs.size() > grp.sizes.size()) return false;|    if (vs.size() + 1 > 0) return false;|JitReducePlanTest.ExpandedGradients*|"
  "row nodes compute no masks|jit/plan/planner.cpp|    if (!is_floating(n.meta.dtype) \&\& n.meta.dtype != DType::Bool) return false;|    if (!is_floating(n.meta.dtype)) return false;|JitReducePlanTest.ExpandedGradients*|"
  "mask counts stay Int64 sums|jit/passes/float_counts.cpp|    bool ok = count_of_mask;|    bool ok = false;|JitReducePlanTest.MaskCounts*|"
  "recorded result perturbed in the last bit|tracer/interpreter.cpp|          values[n.output] = run_eager(def, call, n.meta);\n        }|          values[n.output] = run_eager(def, call, n.meta);\n          Tensor\& o = values[n.output];\n          if (o.dtype() == kFloat32 \&\& o.impl()->numel() > 0) *static_cast<uint32_t*>(o.impl()->data()) ^= 1u;\n        }|Pointwise.*:Reduce*.*:IndexSelect.*:ShapeCat.*:RecordFuzz.RandomPrograms*|KILN_FUZZ_SEEDS=300"
  "lone sums of leaves become kernels|jit/plan/planner.cpp|    if (lone_sum[jj]) {|    if (false) {|JitReducePlanTest.LoneSums*|"
  "row candidates taken without lowering them|jit/plan/planner.cpp|    return lowers_to_row_value(n);|    return true;|JitReducePlanTest.BoolOps*|"
  "float fma through double rounds the sum to nearest|ops/cpu/vecmath/gnu_vec_ops.h|(e != 0.0)|(e != e)|VecmathIsa.*|"
  "eager baseline fma rounds twice|ops/cpu/vecmath/gnu_vec_ops.h|r[i] = std::fma(a[i], b[i], c[i]);|r[i] = a[i] * b[i] + c[i];|VecmathIsa.*|"
  "JIT fma's 213 form multiplies by the addend|jit/cpu/vec_emitter.h|Inst::kIdVfmadd213ps, d, b, c);|Inst::kIdVfmadd213ps, d, c, b);|JitExpDense.*|"
  "SSE2 kernels' fma rounds twice|jit/cpu/vec_emitter.h|c[i] = std::fma(a[i], b[i], c[i]);|c[i] = a[i] * b[i] + c[i];|JitExpDense.*|"
  "JIT keep-mask of exp<true> takes the ordered compare|jit/cpu/vec_emitter.h|  M nlt(F a, F b) const { return cmp(a, b, 5); }|  M nlt(F a, F b) const { return cmp(a, b, 1); }|JitExpDense.ExpOfMasked*|"
  "row max fold puts later values first|jit/cpu/row_passes.cpp|ao.gt_select(xs[i], xs[i + 1])|ao.gt_select(xs[i + 1], xs[i])|JitReduceKernels.PipelinedSoftmaxRowsBitwise|"
  "no OpenBLAS core hint for AVX-512 Intel CPUs|ops/cpu/blas_core_hint.cpp|  if (f.avx512_skx) return f.avx512_bf16 ? \"Cooperlake\" : \"SkylakeX\";|  if (f.avx512_skx) return nullptr;|OpenBlas*|"
  "OpenBLAS core hint for Intel only (Zen 5 keeps Haswell)|ops/cpu/blas_core_hint.cpp|  if (f.avx512_skx) return f.avx512_bf16 ? \"Cooperlake\" : \"SkylakeX\";\n  if (!f.intel) return nullptr;|  if (!f.intel) return nullptr;\n  if (f.avx512_skx) return f.avx512_bf16 ? \"Cooperlake\" : \"SkylakeX\";|OpenBlas*|"
  "slow OpenBLAS core ignores AVX-512|ops/cpu/blas_core_hint.cpp|(f.avx512_skx \&\& !is_avx512_core(core))|(f.avx512_skx \&\& false)|OpenBlas*|"
  "one id for every interned body|tracer/graph_hash.cpp|    ++table->next;\n    table->words += size;|    table->words += size;|GraphHash.*|"
  "stale interned ids kept after the table starts over|tracer/graph_hash.cpp|    if (id < body_table().first.load(std::memory_order_acquire)) {  // none yet (0), or stale|    if (id == 0) {|GraphHash.*|"
  "body scalars keyed by kind (a changed body scalar hits the old plan)|tracer/graph_hash.cpp|    if (mode_ != HashMode::Skeleton) scalars_ = ScalarKey::Values;|    (void)0;|JitBodyPlanTest.*|"
  "drawing kernels pipelined on AVX-512|jit/cpu/render.cpp|isa == JitIsa::Avx512 \&\& !k.uses_index()) {|isa == JitIsa::Avx512) {|JitAssembler.DrawingKernelsTakeTheFastPath|"
  "Compiler weaves copies on its virtual stack|jit/cpu/interleave.cpp|      if (touches_virtual_stack(cc, n)) return false;|      (void)0;|JitFuzz.RandomPointwiseProgramsMatchEager|KILN_JIT=1 KILN_JIT_EAGER_TIER=0 KILN_JIT_ASSEMBLER=0 KILN_FUZZ_OFFSET=20 KILN_FUZZ_SEEDS=2"
  "pipelined loops ignore the register budget|jit/cpu/recording_pipeline.cpp|  return copies.size() * woven_peak(copies[0], split) <= kPipelineVectorBudget ? split : 0;|  return split;|JitUnroll.PipelinesOnlyWhatFitsTheRegisters|KILN_JIT=1"
  "narrow column windows fold their four leaves out of order|ops/cpu/reduce_loops.h|Op::apply(Op::apply(o4[0][k], o4[1][k]), Op::apply(o4[2][k], o4[3][k]))|Op::apply(Op::apply(o4[0][k], o4[2][k]), Op::apply(o4[1][k], o4[3][k]))|ReduceIsa.ColumnsFollowTheDocumentedOrder|KILN_JIT=0"
  "expands lifted over nodes a view reads|jit/passes/broadcast_operands.cpp| \&\& read_elementwise(n.output);|;|JitPassesRecordedTest.NodesReadByAView*|"
  "row sum lanes folded in another tree|jit/cpu/row_passes.cpp|imm(P == 8 ? 0x55 : 0x5)|imm(P == 8 ? 0xAA : 0xA)|JitReduceKernels.*:Reduce.*|"
  "row max/min lanes folded earlier-of-equal|jit/cpu/row_passes.cpp|      auto c = [\&](auto\& o, x86::Vec a, x86::Vec b) { return combine(o, op, a, b); };|      auto c = [\&](auto\& o, x86::Vec a, x86::Vec b) { return combine(o, op, b, a); };|JitReduceKernels.ExtremesOfSignedZeros*|"
  "scatter select's value drops the fill's 0 + src|ops/scatter_rows.cpp|        o[line] = T(0) + s[os];|        o[line] = s[os];|JitScatterSelectTest.*|"
  "scatter select reaches every line|ops/scatter_rows.cpp|      covered = covered \&\& at[d] < index->sizes()[d];|      covered = covered \&\& at[d] < out[d];|JitScatterSelectTest.*|"
  "scatter select takes any fill value|jit/passes/scatter_select.cpp|  return s.to_double() == 0 \&\& !std::signbit(s.to_double());|  return true;|JitScatterSelectTest.*|"
  "scatter_row_index wraps bad indices|ops/scatter_rows.cpp|    const int64_t v = ix[oi];|    const int64_t v = ix[oi] < 0 ? 0 : ix[oi] % classes;|JitScatterSelectTest.*|"
  "one_hot_class checks nothing|ops/one_hot.cpp|) fail_class(ix[i], classes);|) (void)0;|JitOneHotCompareTest.*|"
  "casts collapse through Int64|jit/passes/simplify.cpp|const bool exact = src == DType::Bool |const bool exact = src == DType::Bool or src == DType::Int64 |JitPassesTest.CastChains*|"
  "transposed columns ignore the kept dims' order|ops/cpu/reduce_plan.cpp|    if (mem[i].logical < last_kept) return false;|    if (false) return false;|Reduce.Transposed*|"
  "large blocks not advised for huge pages|runtime/large_blocks.cpp|  if (huge_pages) madvise(p, length, MADV_HUGEPAGE);|  (void)huge_pages;|CpuAllocator.Large*|"
  "threshold 0 still interprets the first run|tracer/region_runner.cpp|  maybe_plan(region, earlier_runs);  // a threshold of 0: before the first run|  (void)earlier_runs;|Recorder.ThresholdZero*|"
  "body interpreter plans not shared|tracer/interpreter.cpp|    BodyPlans\& same = planned[bodies.begin()];|    BodyPlans same;|GraphSubgraphs.*|"
  "many inputs' aliasing ignored|tracer/segment.cpp|      if (!added) alias = at->second;|      (void)at, (void)added;|Recorder.InputsSharing*|"
  "large blocks advised whatever KILN_HUGE_PAGES says|runtime/allocator.cpp|map_large_block(bytes, config().huge_pages)|map_large_block(bytes, true)|CpuAllocator.Large*|"
  "gathered blocks' row values not offset to their rows|jit/plan/gathered_step.cpp|        for (size_t o = 0; o < la.ptrs.size(); ++o) la.ptrs[o] += r0 * la.strides[o][0];\n        for (size_t o : g_operands)|        for (size_t o = 1; o < la.ptrs.size(); ++o) la.ptrs[o] += r0 * la.strides[o][0];\n        for (size_t o : g_operands)|JitGathered*|"
  "gathers never blocked|jit/plan/gathered_step.cpp|  if (rb.blocks == 0) return whole();|  if (rb.blocks >= 0) return whole();|JitGathered*|"
  "eager row blocks' outputs not offset|ops/cpu/reduce_plan.h|      reduce(static_cast<const ReducePlan\&>(rows), r0);|      reduce(static_cast<const ReducePlan\&>(rows), int64_t{0});|Reduce.LargeGathered*|"
  "a gathered tail's launches not offset to the block|jit/plan/gathered_step.cpp|lt.ptrs[o] += r0 * lt.strides[o][gt.dim];|lt.ptrs[o] += 0 * lt.strides[o][gt.dim];|JitGathered*|"
  "a gathered tail reads the buffer along the leaf's strides|jit/plan/gathered_step.cpp|            lt.strides[o] = gt.buffer_strides;|            (void)gt.buffer_strides;|JitGathered*|"
  "a gathered tail joins over memory the blocks read|jit/plan/gathered_tail.cpp|  if (!apart) tail.clear();|  (void)apart;|JitGathered*|"
  "blocked launches stream by their own size|jit/cpu/cpu_kernel.cpp|  numel = std::max(numel, args.whole_elements);|  (void)args.whole_elements;|JitGathered*|"
  "launches per block time their stores|jit/cpu/cpu_kernel.cpp|args.whole_elements > 0 ? pick_part_stores(streaming) : pick_stores(streaming);|pick_stores(streaming);|JitGathered*|"
  "a leaf's gathered block counts leading indices as rows|jit/plan/gathered_step.cpp|gather_rows(r0 * rows_per_index, r1 * rows_per_index, buffer.impl()->data());|gather_rows(r0, r1, buffer.impl()->data());|JitGathered*|"
)

results=()
for m in "${mutations[@]}"; do
  IFS='|' read -r name file old new filter env <<<"$m"
  cp "$file" "$file.orig"
  if ! OLD="$old" NEW="$new" python3 - "$file" <<'PY'
import os, sys
p = sys.argv[1]
old = os.environ["OLD"].replace("\\n", "\n").replace("\\&", "&")
new = os.environ["NEW"].replace("\\n", "\n").replace("\\&", "&")
s = open(p).read()
if s.count(old) != 1:
    sys.exit(f"mutation target found {s.count(old)} times in {p}")
open(p, "w").write(s.replace(old, new))
PY
  then
    results+=("NOT APPLIED     $name (the code changed: update tests/mutations/run.sh)")
    mv "$file.orig" "$file"
    continue
  fi
  log="$scratch/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '_').log"
  if ! cmake --build --preset release -j"$jobs" --target kiln-tests >"$log" 2>&1; then
    results+=("BUILD FAILED    $name (see $log)")
  elif env KILN_JIT=0 $env ./build/release/tests/kiln-tests --gtest_filter="$filter" \
      --gtest_brief=1 >>"$log" 2>&1; then
    results+=("SURVIVED        $name (tests: $filter)")
  else
    results+=("FAIL-as-expected $name ($(grep -c '^\[  FAILED  \].*\.' "$log") failing tests)")
  fi
  mv "$file.orig" "$file"
  touch "$file"
done
echo "mutation results (logs in $scratch):"
printf '  %s\n' "${results[@]}"
! printf '%s\n' "${results[@]}" | grep -q -v '^FAIL-as-expected'
