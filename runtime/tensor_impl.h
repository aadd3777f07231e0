// TensorImpl: the shared state behind a Tensor handle: geometry (sizes, strides, offset in
// elements), dtype, device and the storage it views.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/pooled.h"
#include "runtime/ref.h"
#include "runtime/small_vector.h"
#include "runtime/storage.h"

namespace kiln {

struct AutogradMeta;  // runtime/autograd/autograd_meta.h

class TensorImpl : public RefCounted, public PooledObject {
 public:
  TensorImpl(DimVector sizes, DimVector strides, int64_t offset, DType dtype, Device device,
             Ref<Storage> storage);
  // A row-major tensor at the start of `storage` (strides computed here: the common case of
  // every op output, kept cheap).
  TensorImpl(const DimVector& sizes, DType dtype, Device device, Ref<Storage> storage);
  ~TensorImpl() override;

  const DimVector& sizes() const { return sizes_; }
  const DimVector& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t offset() const { return offset_; }
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool is_contiguous() const { return contiguous_; }
  Storage* storage() const { return storage_.get(); }
  const Ref<Storage>& storage_ref() const { return storage_; }

  // Autograd state; null for tensors that never took part in autograd.
  AutogradMeta* autograd() const { return autograd_.get(); }
  AutogradMeta& ensure_autograd();
  // True for a leaf that requires grad or a tensor with a grad_fn (one branch when null).
  bool requires_grad() const { return autograd_ && requires_grad_slow(); }

  // The recorder's note for a lazy view (tracer/segment.cpp): the graph value it was recorded
  // as, valid while `stamp` still matches its storage's write stamp in the segment.
  struct RecordedValue {
    uint64_t stamp = 0;
    int32_t value = -1;
  };
  RecordedValue& recorded() const { return recorded_; }
  // The recorder's note for a materialized tensor a segment reads: (segment epoch << 32) | the
  // index of its input record. Atomic: threads recording at once may share a tensor (weights).
  std::atomic<uint64_t>& input_note() const { return input_note_; }

  // Address of element 0 (storage base + offset).
  void* data() const {
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize(dtype_));
  }

 private:
  DimVector sizes_;
  DimVector strides_;
  int64_t offset_;
  int64_t numel_;
  DType dtype_;
  Device device_;
  bool contiguous_;
  Ref<Storage> storage_;
  std::unique_ptr<AutogradMeta> autograd_;
  mutable RecordedValue recorded_;
  mutable std::atomic<uint64_t> input_note_{0};

  bool requires_grad_slow() const;
};

// Row-major strides for `sizes`.
DimVector contiguous_strides(const DimVector& sizes);
// True when (sizes, strides) is row-major dense (size-1 dims may have any stride).
bool is_contiguous_layout(const DimVector& sizes, const DimVector& strides);
// True when `t` has exactly the geometry of a new tensor of its sizes: offset 0 and
// contiguous_strides(sizes), size-1 dims included (what a recorded node's result gets).
bool has_fresh_layout(const TensorImpl& t);

// Whether two tensors address the same elements the same way: offset, sizes, strides and dtype
// (the recorder's and the planners' test for writing a result over an input in place).
inline bool same_geometry(const TensorImpl* a, const TensorImpl* b) {
  return a->offset() == b->offset() && a->sizes() == b->sizes() && a->strides() == b->strides() &&
         a->dtype() == b->dtype();
}
// The number of elements of `sizes` (non-negative sizes); a kiln::Error when it overflows int64.
int64_t numel_of(const DimVector& sizes);
// A kiln::Error naming `op` unless a tensor of `sizes` can exist: its element count fits in
// int64 and, when `bytes_too`, so does its size in bytes (an expanded view allocates nothing).
void check_shape_size_slow(const char* op, std::span<const int64_t> sizes, DType dtype,
                           bool bytes_too);
inline void check_shape_size(const char* op, std::span<const int64_t> sizes, DType dtype,
                             bool bytes_too = true) {
  // Up to 4 dims each below 2^15 hold fewer than 2^60 elements: nothing can overflow.
  uint64_t all = 0;
  for (int64_t s : sizes) all |= static_cast<uint64_t>(s);
  if (sizes.size() <= 4 && all < (uint64_t{1} << 15)) [[likely]]
    return;
  check_shape_size_slow(op, sizes, dtype, bytes_too);
}

}  // namespace kiln
