// one_hot: Int64 class indices to an Int64 tensor of shape index.shape + [num_classes].
// Attrs: OneHot uses ints[0] = num_classes (already resolved: one_hot() infers -1 from the data
// before dispatching, since the output shape must be known to the meta function).
// OneHotClass {index} (attrs ints[0] = num_classes, dtype Int32 or Int64): the index as that
// dtype with a trailing dim of 1, after one_hot's checks of its values (the same error): the CPU
// JIT computes one_hot as `indices_of == that` in its readers' kernel
// (jit/passes/one_hot_compare.h).
#include <algorithm>

#include "ops/cpu/strided_rows.h"
#include "ops/functions.h"
#include "ops/index_common.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "runtime/lazy.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

void one_hot_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& index = c.inputs[0];
  KILN_CHECK(index.impl()->dtype() == DType::Int64, "one_hot: expected an Int64 index, got {}",
             describe(index));
  const int64_t classes = c.attrs.ints[0];
  KILN_CHECK(classes >= 0, "one_hot: num_classes must be -1 (inferred) or >= 0, got {}", classes);
  KILN_CHECK(classes > 0 || index.impl()->numel() == 0,
             "one_hot: num_classes is 0 but the index {} is not empty (every class value is out of "
             "range [0, 0))",
             describe(index));
  m.device = index.impl()->device();
  m.dtype = DType::Int64;
  m.sizes = index.impl()->sizes();
  m.sizes.push_back(classes);
}

[[noreturn]] void fail_class(int64_t value, int64_t classes) {
  fail("one_hot: class value {} is out of range for num_classes {} (expected a value in [0, {}))",
       value, classes, classes);
}

void one_hot_class_meta(const OpCall& c, OutputMeta& m) {
  OutputMeta full;
  one_hot_meta(c, full);
  m.device = full.device;
  m.dtype = c.attrs.dtype == DType::Int32 ? DType::Int32 : DType::Int64;
  m.sizes = c.inputs[0].impl()->sizes();
  m.sizes.push_back(1);
}

void one_hot_class_eager(const OpCall& c, const Tensor& out) {
  const Tensor index = c.inputs[0].contiguous();
  const int64_t* ix = static_cast<const int64_t*>(index.impl()->data());
  const int64_t classes = c.attrs.ints[0], n = index.numel();
  for (int64_t i = 0; i < n; ++i)
    if (ix[i] < 0 || ix[i] >= classes) fail_class(ix[i], classes);
  if (out.impl()->dtype() == DType::Int32) {
    int32_t* o = static_cast<int32_t*>(out.impl()->data());
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int32_t>(ix[i]);
  } else {
    std::copy(ix, ix + n, static_cast<int64_t*>(out.impl()->data()));
  }
}

void one_hot_eager(const OpCall& c, const Tensor& out) {
  const TensorImpl* ii = c.inputs[0].impl();
  const int64_t classes = c.attrs.ints[0];
  StridedRows<1> rows(nonempty_sizes(ii), {nonempty_strides(ii)});
  const int64_t* ix = static_cast<const int64_t*>(ii->data());
  int64_t* o = static_cast<int64_t*>(out.impl()->data());
  const int64_t sx = rows.inner_stride(0);
  BadIndex bad;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(classes, 1));
  parallel_for(0, rows.numel(), grain, [&](int64_t b, int64_t e) {
    std::fill(o + b * classes, o + e * classes, int64_t{0});
    int64_t pos = b;  // linear index of the run's first element
    rows.for_range(b, e, [&](const StridedRows<1>::Offsets& off, int64_t n) {
      for (int64_t i = 0; i < n && !bad.seen(); ++i) {
        const int64_t v = ix[off[0] + i * sx];
        if (v < 0 || v >= classes) return bad.record(v);
        o[(pos + i) * classes + v] = 1;
      }
      pos += n;
    });
  });
  if (bad.seen()) fail_class(bad.value(), classes);
}

}  // namespace

void register_one_hot_op() {
  register_op(OpId::OneHot, {"one_hot", one_hot_meta, one_hot_eager, kChecksData});
  register_op(OpId::OneHotClass,
              {"one_hot_class", one_hot_class_meta, one_hot_class_eager, kChecksData});
}

Tensor one_hot(const Tensor& index, int64_t num_classes) {
  KILN_CHECK(index.defined(), "one_hot: the index tensor is undefined");
  KILN_CHECK(index.dtype() == DType::Int64, "one_hot: expected an Int64 index, got {}",
             describe(index));
  KILN_CHECK(num_classes >= -1, "one_hot: num_classes must be -1 (inferred) or >= 0, got {}",
             num_classes);
  if (index.numel() == 0) {
    KILN_CHECK(num_classes > 0,
               "one_hot: cannot infer the number of classes from an empty index {} (num_classes "
               "is {})",
               describe(index), num_classes);
  } else if (num_classes == -1) {
    // Data-dependent output shape: a sync point, as in PyTorch (index.max().item()).
    sync_point(index, SyncReason::DataDependent);
    Tensor flat = index.contiguous().to(Device::cpu());  // read on the host
    const int64_t* p = flat.data_ptr<int64_t>();
    const auto [lo, hi] = std::minmax_element(p, p + flat.numel());
    KILN_CHECK(*lo >= 0, "one_hot: class values must be non-negative, got {}", *lo);
    num_classes = *hi + 1;
  }
  Attrs a;
  a.ints[0] = num_classes;
  const Tensor in[] = {index};
  return dispatch(OpId::OneHot, in, a);
}

}  // namespace kiln
