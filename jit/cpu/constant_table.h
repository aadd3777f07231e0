// The hoisted constants of one kernel function (vec_emitter.h, AsmVecOps::constant): a lane
// pattern and width -> the register loaded with it before the loops. Open addressing in one
// vector: a render looks a constant up for every splat of the vector math (hundreds per kernel)
// and adds tens to thousands of them, and a std::map allocated a node for each.
#pragma once
#include <asmjit/x86.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kiln::jit {

class ConstantTable {
 public:
  // The register holding (bits, shape), or null. `shape` >= 0 tells the lane width and type.
  const asmjit::x86::Vec* find(uint64_t bits, int32_t shape) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(bits, shape);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.shape < 0) return nullptr;
      if (s.bits == bits && s.shape == shape) return &s.reg;
    }
  }
  // Adds (bits, shape) -> reg; (bits, shape) must not be present.
  void insert(uint64_t bits, int32_t shape, asmjit::x86::Vec reg) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    place(Slot{bits, shape, reg});
    ++used_;
    if (asmjit::Operand::isVirtId(reg.id())) {
      const size_t i = asmjit::Operand::virtIdToIndex(reg.id());
      if (i >= is_constant_.size()) is_constant_.resize(std::max<size_t>(64, 2 * i + 2), 0);
      is_constant_[i] = 1;
    }
  }
  // Whether `reg` holds a constant of this table (a fused multiply-add picks its form by it).
  bool holds(const asmjit::x86::Vec& reg) const {
    if (!asmjit::Operand::isVirtId(reg.id())) return false;
    const size_t i = asmjit::Operand::virtIdToIndex(reg.id());
    return i < is_constant_.size() && is_constant_[i] != 0;
  }
  size_t size() const { return used_; }

 private:
  struct Slot {
    uint64_t bits = 0;
    int32_t shape = -1;  // -1: empty
    asmjit::x86::Vec reg;
  };
  size_t home(uint64_t bits, int32_t shape) const {
    uint64_t h = (bits ^ (static_cast<uint64_t>(shape) << 48)) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
  }
  void place(const Slot& s) {
    size_t i = home(s.bits, s.shape);
    while (slots_[i].shape >= 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    for (const Slot& s : old)
      if (s.shape >= 0) place(s);
  }
  std::vector<Slot> slots_;           // a power of two in size, at most half full
  std::vector<uint8_t> is_constant_;  // by virtual register index
  size_t used_ = 0;
};

}  // namespace kiln::jit
