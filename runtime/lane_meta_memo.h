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
// How: a two-way set-associative table of 64 sets, keyed by the op's place: a hash of the
// interval's signature so far (IntervalCount::sig: the ops before it and their work), its index
// and the signature of the interval before it. An interval that starts with an extra op (a
// solve's first iteration creating its state) thus lands elsewhere than the steady one, and
// the first ops of two intervals that alternate (a forward step, then an update) apart, instead
// of evicting each other. An entry holds its place, the op, its attributes, its inputs'
// metadata and the meta function's result; find() compares them, bit for bit (scalars too:
// same_bits), and answers only on a full match; remember() writes the entry of the place (or
// replaces the set's less recently used one) after the meta function accepted a call, backing
// off where the place's entry keeps missing: a rewrite costs ~300 instructions, and a scalar
// that changes every interval (a step size, a time) would pay it at every op. It rewrites at
// the 1st, 2nd, 4th, ... consecutive miss, then every 64th: one change of the program's pattern
// is learnt at once, a place that never repeats costs a failed comparison. Views (whose result
// depends on the input's offset), ops of more than kInputs inputs and inputs of more than kDims
// dims are neither remembered nor answered. Never stale: nothing but the compared fields decides
// the result. One thread's lane owns it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/op_call.h"

namespace kiln {

class LaneMetaMemo {
 public:
  static constexpr size_t kSets = 64, kWays = 2;
  static constexpr size_t kInputs = 3;  // at most, of an op remembered
  static constexpr size_t kDims = 6;    // at most, of an input remembered

  // The remembered result of the call at `place` (IntervalCount::place()) where `call` matches
  // its entry, else null. Valid until the next remember(). Inline: the dispatcher asks it for
  // every op of the lane.
  const OutputMeta* find(uint64_t place, const OpCall& call) const {
    if (!entries_) return nullptr;
    Entry* set = &entries_[set_of(place) * kWays];
    Entry* e = entry_of(set, place);
    if (e == nullptr) return nullptr;
    // Attributes first: a scalar that changes every interval (a step size) fails there, early.
    bool match =
        e->op == call.op && e->inputs == call.inputs.size() && same_bits(e->attrs, call.attrs);
    for (size_t i = 0; match && i < e->inputs; ++i)
      match = e->input[i].matches(*call.inputs[i].impl());
    if (!match) {
      ++e->misses;
      return nullptr;
    }
    e->misses = 0;
    set[0].recent = e == &set[0];  // the other way is the one to replace
    ++answered_;
    return &e->meta;
  }
  // Remembers `meta` (which the meta function gave) as the result of `call` at `place`.
  void remember(uint64_t place, const OpCall& call, const OutputMeta& meta);
  // How many calls find() answered (tests).
  int64_t answered() const { return answered_; }

 private:
  // An input's sizes and strides side by side (one loop compares both), dtype and device.
  struct InputMeta {
    size_t ndim = 0;
    DType dtype = DType::Float32;
    Device device = Device::cpu();
    std::array<int64_t, 2 * kDims> dims{};  // sizes, then strides at kDims
    bool matches(const TensorImpl& t) const {
      const DimVector &sizes = t.sizes(), &strides = t.strides();
      if (sizes.size() != ndim || t.dtype() != dtype || t.device() != device) return false;
      for (size_t d = 0; d < ndim; ++d)
        if (sizes[d] != dims[d] || strides[d] != dims[kDims + d]) return false;
      return true;
    }
  };
  struct Entry {
    bool valid = false;
    bool recent = false;  // way 0 of a set only: it was used last
    uint64_t place = 0;   // the full place (the set holds places of equal top bits)
    uint32_t misses = 0;  // find()s that missed since the last match (remember() backs off)
    OpId op{};
    size_t inputs = 0;
    Attrs attrs;
    std::array<InputMeta, kInputs> input;
    OutputMeta meta;
  };
  static size_t set_of(uint64_t place) { return static_cast<size_t>(place >> 58); }  // kSets: 64
  // The way of `set` holding `place`, else null.
  static Entry* entry_of(Entry* set, uint64_t place) {
    return set[0].valid && set[0].place == place   ? &set[0]
           : set[1].valid && set[1].place == place ? &set[1]
                                                   : nullptr;
  }
  // kSets x kWays, from the first remember(); find() counts misses.
  std::unique_ptr<Entry[]> entries_;
  mutable int64_t answered_ = 0;
};

}  // namespace kiln
