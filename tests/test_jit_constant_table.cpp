// jit/cpu/constant_table.h: the hoisted constants' lookup. Every kernel exercises it a few
// dozen times; these check what kernels rarely reach: thousands of constants (growth), the same
// bits at several widths (distinct entries), and misses after growth.
#include <gtest/gtest.h>

#include <cstdint>

#include "jit/cpu/constant_table.h"

namespace kiln::jit {
namespace {

asmjit::x86::Vec reg_for(uint32_t i) { return asmjit::x86::Zmm(asmjit::Operand::indexToVirtId(i)); }

TEST(JitConstantTable, FindsEveryConstantItHoldsAndNoOther) {
  ConstantTable t;
  EXPECT_EQ(t.find(0, 0), nullptr);  // empty
  constexpr uint32_t kN = 5000;      // more than one growth step (64 slots at first)
  const int32_t shapes[] = {16 * 16 + 4, 64 * 16 + 4, 64 * 16 + 8};
  uint32_t next = 0;
  for (uint32_t i = 0; i < kN; ++i)
    for (int32_t shape : shapes) {
      const uint64_t bits = uint64_t{i} * 0x100000001ull;  // equal halves: collide on xor hashes
      ASSERT_EQ(t.find(bits, shape), nullptr);
      t.insert(bits, shape, reg_for(next++));
    }
  EXPECT_EQ(t.size(), kN * 3);
  next = 0;
  for (uint32_t i = 0; i < kN; ++i)
    for (int32_t shape : shapes) {
      const asmjit::x86::Vec* r = t.find(uint64_t{i} * 0x100000001ull, shape);
      ASSERT_NE(r, nullptr) << i << " " << shape;
      EXPECT_EQ(r->id(), reg_for(next++).id());
    }
  EXPECT_EQ(t.find(uint64_t{kN} * 0x100000001ull, shapes[0]), nullptr);
  EXPECT_EQ(t.find(1, shapes[0]), nullptr);
  EXPECT_EQ(t.find(0, 16 * 16 + 8), nullptr);  // known bits, another shape
}

}  // namespace
}  // namespace kiln::jit
