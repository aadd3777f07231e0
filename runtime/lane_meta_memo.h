// The metadata of the eager lane's ops, remembered by their place in the interval.
//
// Why: an op that the eager lane runs pays its meta function like any eager op (~290
// instructions for a broadcasting binary op: 11% of kiln-perf host_loop's eager instructions).
// The lane runs intervals that repeat (the eager tier chose to run them eagerly because they
// do), so the op at a given place of this interval is usually the op at that place of the last
// one, with inputs of the same metadata: it then has the same output metadata (a meta function
// is a pure function of the call's attributes and its inputs' sizes, strides, dtypes and
// devices: MetaFn in runtime/dispatcher.h), and passed the same checks.
//
// How: a direct-mapped table of kSlots entries; an op's slot is a hash of its place: the
// interval's signature so far (IntervalCount::sig: the ops before it and their work) and its
// index. An interval that starts with an extra op (a solve's first iteration creating its
// state) thus lands elsewhere than the steady one instead of evicting it. An entry holds the op,
// its attributes, its inputs' metadata and the meta function's result; find() compares them, bit
// for bit (scalars too: same_bits), and answers only on a full match; remember() overwrites the
// slot after the meta function accepted a call. Views (whose result depends on the input's
// offset) and ops of more than kInputs inputs are neither remembered nor answered. Never stale:
// nothing but the compared fields decides the result. One thread's lane owns it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/op_call.h"

namespace kiln {

class LaneMetaMemo {
 public:
  static constexpr size_t kSlots = 64;
  static constexpr size_t kInputs = 3;  // at most, of an op remembered

  // The remembered result of the call at `place` (IntervalCount::place()) where `call` matches
  // its entry, else null. Valid until the next remember().
  const OutputMeta* find(uint64_t place, const OpCall& call) const;
  // Remembers `meta` (which the meta function gave) as the result of `call` at `place`.
  void remember(uint64_t place, const OpCall& call, const OutputMeta& meta);
  // How many calls find() answered (tests).
  int64_t answered() const { return answered_; }

 private:
  struct InputMeta {
    DimVector sizes, strides;
    DType dtype = DType::Float32;
    Device device = Device::cpu();
  };
  struct Entry {
    bool valid = false;
    OpId op{};
    size_t inputs = 0;
    Attrs attrs;
    std::array<InputMeta, kInputs> input;
    OutputMeta meta;
  };
  static size_t slot(uint64_t place) { return static_cast<size_t>(place >> 58); }  // kSlots
  std::unique_ptr<Entry[]> entries_;  // kSlots, from the first remember()
  mutable int64_t answered_ = 0;
};

}  // namespace kiln
