// The fast emitter's register assignment (jit/cpu/reg_alloc.h) on hand-written programs, checked
// against intervals recomputed here from the rewritten code: two values live at once never share
// a physical register, spills happen only when the registers run out, and hoisted constants read
// only from r/m slots are demoted to their pool addresses. (Every JIT kernel test runs it too;
// these pin the scan itself: its release of dead values, its victims, its demotion shortcut.)
#include <gtest/gtest.h>

#include <vector>

#include "jit/cpu/reg_alloc.h"

namespace kiln::jit {
namespace {

using namespace asmjit;
namespace Inst = x86::Inst;

uint32_t vid(uint32_t index) { return Operand::indexToVirtId(index); }

struct Program {
  JitIsa isa = JitIsa::Avx512;
  std::vector<RecordedInst> code;
  std::vector<VirtReg> regs;

  uint32_t add_reg(uint8_t group, int8_t fixed = -1) {
    VirtReg v;
    v.group = group;
    v.fixed = fixed;
    regs.push_back(v);
    return static_cast<uint32_t>(regs.size() - 1);
  }
  Operand_ vec(uint32_t r) const {
    return isa == JitIsa::Avx512 ? Operand_(x86::Zmm(vid(r))) : Operand_(x86::Ymm(vid(r)));
  }
  Operand_ gp(uint32_t r) const { return x86::Gpq(vid(r)); }
  void inst(InstId id, Operand_ a, Operand_ b = Operand_(), Operand_ c = Operand_()) {
    RecordedInst in;
    in.id = id;
    in.ops[0] = a;
    in.ops[1] = b;
    in.ops[2] = c;
    code.push_back(in);
  }
  void end() {
    RecordedInst in;
    in.id = RecordedInst::kEndFunction;
    code.push_back(in);
  }
};

struct Live {
  int first = -1, last = -1;
};

// Each virtual register's first and last reference in `code` (no loops in these programs).
std::vector<Live> references(const std::vector<RecordedInst>& code, size_t nregs) {
  std::vector<Live> live(nregs);
  auto see = [&](uint32_t id, int at) {
    if (!Operand::isVirtId(id)) return;
    Live& l = live[Operand::virtIdToIndex(id)];
    if (l.first < 0) l.first = at;
    l.last = at;
  };
  for (int at = 0; at < static_cast<int>(code.size()); ++at)
    for (const Operand_& op : code[at].ops) {
      if (op.isReg()) see(op.id(), at);
      if (op.isMem()) {
        const BaseMem& m = op.as<BaseMem>();
        if (m.hasBaseReg()) see(m.baseId(), at);
        if (m.hasIndexReg()) see(m.indexId(), at);
      }
    }
  return live;
}

// No two registers of a group that are live at once share a physical register (one may take
// the register of a value whose last reference is the instruction that defines it).
void expect_no_conflicts(const Program& p, const RegAssignment& ra) {
  const std::vector<Live> live = references(p.code, p.regs.size());
  ASSERT_EQ(ra.phys.size(), p.regs.size());
  int checked = 0;
  for (size_t a = 0; a < live.size(); ++a) {
    if (live[a].first < 0) continue;
    ASSERT_GE(ra.phys[a], 0) << "register " << a << " is referenced but has no register";
    if (p.regs[a].fixed >= 0) {
      EXPECT_EQ(ra.phys[a], p.regs[a].fixed);
    }
    for (size_t b = a + 1; b < live.size(); ++b) {
      if (live[b].first < 0 || p.regs[a].group != p.regs[b].group) continue;
      if (ra.phys[a] != ra.phys[b]) continue;
      ++checked;
      EXPECT_FALSE(live[a].first < live[b].last && live[b].first < live[a].last)
          << "registers " << a << " [" << live[a].first << ", " << live[a].last << "] and " << b
          << " [" << live[b].first << ", " << live[b].last << "] share physical register "
          << int(ra.phys[a]);
    }
  }
  EXPECT_GT(checked, 0) << "no register was reused: the program tests nothing";
}

// `n` vector values loaded from [base + 64 i], all live until a sum consumes them in reverse.
Program many_live_values(JitIsa isa, int n) {
  Program p;
  p.isa = isa;
  const uint32_t base = p.add_reg(0, static_cast<int8_t>(x86::Gp::kIdDi));  // the argument
  std::vector<uint32_t> v;
  for (int i = 0; i < n; ++i) {
    v.push_back(p.add_reg(1));
    p.inst(Inst::kIdVmovups, p.vec(v.back()), x86::ptr(x86::Gpq(vid(base)), 64 * i));
  }
  uint32_t acc = v.back();
  for (int i = n - 2; i >= 0; --i) {
    const uint32_t next = p.add_reg(1);
    p.inst(Inst::kIdVaddps, p.vec(next), p.vec(acc), p.vec(v[i]));
    acc = next;
  }
  p.inst(Inst::kIdVmovups, x86::ptr(x86::Gpq(vid(base))), p.vec(acc));
  p.end();
  return p;
}

bool assign(Program& p, RegAssignment& ra, bool demote_free_constants = false) {
  uint32_t frame = 0;
  std::vector<RecordedInst> scratch;
  RegAllocScratch work;
  return assign_registers(p.code, p.regs, p.isa, 0, frame, ra, scratch, work,
                          demote_free_constants);
}

TEST(JitRegAlloc, ValuesThatFitTheRegistersAreNotSpilled) {
  for (JitIsa isa : {JitIsa::Avx512, JitIsa::Avx2}) {
    const int nvec = isa == JitIsa::Avx512 ? 32 : 16;
    Program p = many_live_values(isa, nvec - 1);
    RegAssignment ra;
    ASSERT_TRUE(assign(p, ra));
    EXPECT_EQ(ra.spilled, 0);
    EXPECT_EQ(ra.rounds, 1);
    expect_no_conflicts(p, ra);
  }
}

TEST(JitRegAlloc, MoreLiveValuesThanRegistersSpillAndStillNeverShare) {
  for (JitIsa isa : {JitIsa::Avx512, JitIsa::Avx2}) {
    const int nvec = isa == JitIsa::Avx512 ? 32 : 16;
    Program p = many_live_values(isa, nvec + 8);
    RegAssignment ra;
    ASSERT_TRUE(assign(p, ra));
    EXPECT_GT(ra.spilled, 0);
    EXPECT_GE(ra.rounds, 2);
    expect_no_conflicts(p, ra);
  }
}

TEST(JitRegAlloc, ASpilledValueTwoInstructionsInARowReadIsReloadedOnce) {
  // A row stride `d`, loaded first and read last by two prefetch-like loads in a row, while 16
  // pointers are live: d lives furthest ahead and goes to a stack slot. The second load reads
  // the register the first one's reload filled (one reload, not two), and nothing shares.
  Program p;
  p.isa = JitIsa::Avx2;
  const uint32_t base = p.add_reg(0, static_cast<int8_t>(x86::Gp::kIdDi));
  const uint32_t d = p.add_reg(0);
  p.inst(Inst::kIdMov, p.gp(d), x86::ptr(x86::Gpq(vid(base)), 512));
  std::vector<uint32_t> ptrs;
  for (int i = 0; i < 16; ++i) {
    ptrs.push_back(p.add_reg(0));
    p.inst(Inst::kIdMov, p.gp(ptrs.back()), x86::ptr(x86::Gpq(vid(base)), 8 * i));
  }
  for (int i = 0; i < 16; ++i) {
    const uint32_t v = p.add_reg(1);
    p.inst(Inst::kIdVmovups, p.vec(v), x86::ptr(x86::Gpq(vid(ptrs[i]))));
    p.inst(Inst::kIdVmovups, x86::ptr(x86::Gpq(vid(base)), 64 * i), p.vec(v));
  }
  const uint32_t a = p.add_reg(1), b = p.add_reg(1);
  p.inst(Inst::kIdVmovups, p.vec(a), x86::ptr(x86::Gpq(vid(base)), x86::Gpq(vid(d))));
  p.inst(Inst::kIdVmovups, p.vec(b), x86::ptr(x86::Gpq(vid(base)), x86::Gpq(vid(d)), 0, 64));
  p.inst(Inst::kIdVaddps, p.vec(a), p.vec(a), p.vec(b));
  p.inst(Inst::kIdVmovups, x86::ptr(x86::Gpq(vid(base))), p.vec(a));
  p.end();
  RegAssignment ra;
  ASSERT_TRUE(assign(p, ra));
  ASSERT_GT(ra.spilled, 0);
  expect_no_conflicts(p, ra);
  // The two loads through d's reload: the same index register, one reload (a general move
  // from memory) right before the first and none between.
  int first = -1;
  for (size_t i = 0; i + 1 < p.code.size(); ++i) {
    const RecordedInst &x = p.code[i], &y = p.code[i + 1];
    if (x.id == Inst::kIdVmovups && y.id == Inst::kIdVmovups && x.ops[1].isMem() &&
        y.ops[1].isMem() && x.ops[1].as<BaseMem>().hasIndexReg() &&
        y.ops[1].as<BaseMem>().hasIndexReg())
      first = static_cast<int>(i);
  }
  ASSERT_GT(first, 0) << "the two loads through d are not next to each other";
  const RecordedInst &x = p.code[static_cast<size_t>(first)],
                     &y = p.code[static_cast<size_t>(first) + 1];
  EXPECT_EQ(x.ops[1].as<BaseMem>().indexId(), y.ops[1].as<BaseMem>().indexId());
  const RecordedInst& reload = p.code[static_cast<size_t>(first) - 1];
  EXPECT_TRUE(reload.id == Inst::kIdMov && reload.ops[1].isMem() &&
              reload.ops[0].id() == x.ops[1].as<BaseMem>().indexId())
      << "no reload of d right before its first use";
}

TEST(JitRegAlloc, DeadValuesFreeTheirRegistersForALongChain) {
  // 2000 dependent additions: each value dies at the next instruction, so a handful of
  // registers carry the whole chain (a scan that never released would run out at 32).
  Program p;
  const uint32_t base = p.add_reg(0, static_cast<int8_t>(x86::Gp::kIdDi));
  uint32_t acc = p.add_reg(1);
  p.inst(Inst::kIdVmovups, p.vec(acc), x86::ptr(x86::Gpq(vid(base))));
  for (int i = 0; i < 2000; ++i) {
    const uint32_t next = p.add_reg(1);
    p.inst(Inst::kIdVaddps, p.vec(next), p.vec(acc), p.vec(acc));
    acc = next;
  }
  p.inst(Inst::kIdVmovups, x86::ptr(x86::Gpq(vid(base))), p.vec(acc));
  p.end();
  RegAssignment ra;
  ASSERT_TRUE(assign(p, ra));
  EXPECT_EQ(ra.spilled, 0);
  uint32_t used = 0;
  for (size_t r = 0; r < p.regs.size(); ++r)
    if (p.regs[r].group == 1 && ra.phys[r] >= 0) used |= 1u << ra.phys[r];
  EXPECT_LE(__builtin_popcount(used), 2);
  expect_no_conflicts(p, ra);
}

// The code as RecordingAssembler::encode emits it: the loads of constants left in their pool
// dropped, their reads replaced by the pool addresses (reg_alloc.h).
void encoders_view(Program& p, const RegAssignment& ra) {
  std::vector<RecordedInst> code;
  for (RecordedInst in : p.code) {
    if (loads_constant_left_in_pool(in, ra)) continue;
    read_constants_from_pool(in, p.regs, ra);
    code.push_back(in);
  }
  p.code = code;
}

TEST(JitRegAlloc, ConstantsReadFromRmSlotsAreDemotedToTheirPoolAddresses) {
  // 40 hoisted constants, each loaded once before the work and added from the r/m slot: with
  // demote_free_constants every one of them reads its pool address in place (no register, no
  // load), and the additions keep their order.
  Program p;
  const uint32_t base = p.add_reg(0, static_cast<int8_t>(x86::Gp::kIdDi));
  const Label pool(1);  // a label id: only the operand is kept (nothing is encoded)
  std::vector<uint32_t> c;
  for (int i = 0; i < 40; ++i) {
    c.push_back(p.add_reg(1));
    p.regs.back().constant = true;
    p.regs.back().pool = x86::ptr(pool, 64 * i);
    p.inst(Inst::kIdVmovaps, p.vec(c.back()), p.regs.back().pool);
  }
  uint32_t acc = p.add_reg(1);
  p.inst(Inst::kIdVmovups, p.vec(acc), x86::ptr(x86::Gpq(vid(base))));
  for (int i = 0; i < 40; ++i) {
    const uint32_t next = p.add_reg(1);
    p.inst(Inst::kIdVaddps, p.vec(next), p.vec(acc), p.vec(c[i]));
    acc = next;
  }
  p.inst(Inst::kIdVmovups, x86::ptr(x86::Gpq(vid(base))), p.vec(acc));
  p.end();
  const size_t before = p.code.size();
  RegAssignment ra;
  ASSERT_TRUE(assign(p, ra, true));
  EXPECT_EQ(ra.demoted, 40);
  EXPECT_EQ(ra.spilled, 0);
  EXPECT_EQ(ra.rounds, 1);  // the demotion shortcut: no rescan of the rewritten code
  EXPECT_EQ(p.code.size(), before) << "nothing else given up: the code is left to the encoder";
  for (uint32_t r : c) EXPECT_EQ(ra.phys[r], RegAssignment::kInPool) << r;
  encoders_view(p, ra);
  EXPECT_EQ(p.code.size(), before - 40);
  int from_pool = 0;
  for (const RecordedInst& in : p.code)
    if (in.id == Inst::kIdVaddps && in.ops[2].isMem()) {
      EXPECT_EQ(in.ops[2].as<x86::Mem>().offset(), 64 * from_pool);
      ++from_pool;
    }
  EXPECT_EQ(from_pool, 40);
  expect_no_conflicts(p, ra);
}

// A loop of `temps` loads live at once, summed into `sums` accumulators that the loop carries
// (each updated as `t = acc + x; acc = t`, the move the renderers emit), on AVX2: 16 registers.
struct SumLoop {
  Program p;
  std::vector<uint32_t> accs;
};
SumLoop sum_loop(int temps, int sums) {
  SumLoop s;
  Program& p = s.p;
  p.isa = JitIsa::Avx2;
  const uint32_t base = p.add_reg(0, static_cast<int8_t>(x86::Gp::kIdDi));
  const uint32_t count = p.add_reg(0);
  for (int a = 0; a < sums; ++a) {
    s.accs.push_back(p.add_reg(1));
    p.inst(Inst::kIdVxorps, p.vec(s.accs.back()), p.vec(s.accs.back()), p.vec(s.accs.back()));
  }
  p.inst(Inst::kIdMov, p.gp(count), imm(8));
  const Label loop(Operand::indexToVirtId(0));
  RecordedInst bind;
  bind.id = RecordedInst::kBindLabel;
  bind.ops[0] = loop;
  p.code.push_back(bind);
  std::vector<uint32_t> x;
  for (int i = 0; i < temps; ++i) {
    x.push_back(p.add_reg(1));
    p.inst(Inst::kIdVmovups, p.vec(x.back()), x86::ptr(x86::Gpq(vid(base)), 32 * i));
  }
  for (int i = temps - 1; i >= 0; --i) {  // the first loaded is the last summed: all live at once
    const uint32_t acc = s.accs[static_cast<size_t>(i % sums)];
    const uint32_t t = p.add_reg(1);
    p.inst(Inst::kIdVaddps, p.vec(t), p.vec(acc), p.vec(x[static_cast<size_t>(i)]));
    p.inst(Inst::kIdVmovaps, p.vec(acc), p.vec(t));
  }
  p.inst(Inst::kIdAdd, p.gp(base), imm(32 * temps));
  p.inst(Inst::kIdSub, p.gp(count), imm(1));
  p.inst(Inst::kIdJnz, loop);
  for (size_t a = 0; a < s.accs.size(); ++a)
    p.inst(Inst::kIdVmovups, x86::ptr(x86::Gpq(vid(base)), 32 * static_cast<int>(a)),
           p.vec(s.accs[a]));
  p.end();
  return s;
}

bool assign_loop(Program& p, RegAssignment& ra) {
  uint32_t frame = 0;
  std::vector<RecordedInst> scratch;
  RegAllocScratch work;
  return assign_registers(p.code, p.regs, p.isa, Operand::indexToVirtId(0), frame, ra, scratch,
                          work);
}

TEST(JitRegAlloc, AValueTheLoopCarriesKeepsItsRegisterWhenTemporariesCanSpill) {
  // 18 loads live at once need spills on AVX2. The accumulator lives to the loop's end, the
  // furthest of all: Poletto and Sarkar's choice, but in memory each iteration's update would
  // wait on the last one's store. The temporaries go instead.
  SumLoop s = sum_loop(18, 1);
  RegAssignment ra;
  ASSERT_TRUE(assign_loop(s.p, ra));
  EXPECT_GT(ra.spilled, 0);
  EXPECT_GE(ra.phys[s.accs[0]], 0) << "the accumulator was spilled";
  for (const RecordedInst& in : s.p.code)  // no stack slot holds it: no store after its update
    if (in.id == Inst::kIdVmovaps && in.ops[0].isReg()) {
      EXPECT_EQ(in.ops[0].id(), vid(s.accs[0]));
    }
}

TEST(JitRegAlloc, ASpilledValueOverwrittenByAMoveIsNotReloadedFirst) {
  // 17 accumulators on 16 registers: one lives in a stack slot. Its update `acc = t` (a whole
  // move) writes a short-lived register stored to the slot: nothing reads the slot before.
  SumLoop s = sum_loop(17, 17);
  RegAssignment ra;
  ASSERT_TRUE(assign_loop(s.p, ra));
  ASSERT_GT(ra.spilled, 0);
  int moves_into_spilled = 0;
  for (size_t i = 1; i + 1 < s.p.code.size(); ++i) {
    const RecordedInst& in = s.p.code[i];
    if (in.id != Inst::kIdVmovaps) continue;
    const RecordedInst& next = s.p.code[i + 1];
    if (!(next.id == Inst::kIdVmovups && next.ops[0].isMem() && next.ops[1].isReg() &&
          next.ops[1].id() == in.ops[0].id()))
      continue;  // not a spilled accumulator's update (no store to its slot follows)
    ++moves_into_spilled;
    const RecordedInst& before = s.p.code[i - 1];
    EXPECT_FALSE(before.id == Inst::kIdVmovups && before.ops[0].isReg() &&
                 before.ops[0].id() == in.ops[0].id() && before.ops[1].isMem())
        << "a reload of the slot the move overwrites, at instruction " << i;
  }
  EXPECT_GT(moves_into_spilled, 0);
}

// live_across_calls (reg_alloc.h): the registers a call must save are those of values referenced
// before and after it, in each group, and only those (a value dying before the call, one made
// after it, a spilled one in its frame slot are not); a value live into a loop that holds the
// call is live across it even when its last reference comes before the call in the code.
TEST(JitRegAlloc, LiveAcrossACallAreTheValuesReferencedOnBothSides) {
  Program p;
  p.isa = JitIsa::Avx512;
  const uint32_t base = p.add_reg(0, static_cast<int8_t>(x86::Gp::kIdDi));
  const uint32_t across = p.add_reg(1), dies = p.add_reg(1), after = p.add_reg(1);
  const uint32_t count = p.add_reg(0), mask = p.add_reg(2), looped = p.add_reg(1);
  auto call = [&] {
    RecordedInst in;
    in.id = RecordedInst::kCall;
    in.ops[0] = imm(0x1234);
    in.ops[1] = x86::ptr(x86::rsp, 0);
    in.ops[2] = x86::ptr(x86::rsp, 256);
    p.code.push_back(in);
  };
  const Label loop(Operand::indexToVirtId(0));  // any label id: the test binds it itself
  p.inst(Inst::kIdVmovups, p.vec(across), x86::ptr(x86::Gpq(vid(base))));
  p.inst(Inst::kIdVmovups, p.vec(dies), x86::ptr(x86::Gpq(vid(base)), 64));
  p.inst(Inst::kIdVmovups, p.vec(looped), x86::ptr(x86::Gpq(vid(base)), 128));
  p.inst(Inst::kIdMov, p.gp(count), imm(4));
  p.inst(Inst::kIdKxnorw, x86::KReg(vid(mask)), x86::KReg(vid(mask)), x86::KReg(vid(mask)));
  p.inst(Inst::kIdVmovups, x86::ptr(x86::Gpq(vid(base)), 192), p.vec(dies));  // dies here
  RecordedInst bind;
  bind.id = RecordedInst::kBindLabel;
  bind.ops[0] = loop;
  p.code.push_back(bind);
  // In the loop: `looped` is read before the call only, but the loop's next iteration reads it
  // again after this iteration's call.
  p.inst(Inst::kIdVaddps, p.vec(across), p.vec(across), p.vec(looped));
  call();
  p.inst(Inst::kIdVmovups, p.vec(after), x86::ptr(x86::Gpq(vid(base)), 256));
  p.inst(Inst::kIdVaddps, p.vec(across), p.vec(across), p.vec(after));
  p.inst(Inst::kIdSub, p.gp(count), imm(1));
  p.inst(Inst::kIdJnz, loop);
  RecordedInst masked;  // the mask, read after the loop
  masked.id = Inst::kIdVmovups;
  masked.extra.init(x86::KReg(vid(mask)));
  masked.ops[0] = x86::ptr(x86::Gpq(vid(base)));
  masked.ops[1] = p.vec(across);
  p.code.push_back(masked);
  p.end();
  uint32_t frame = 512;
  std::vector<RecordedInst> scratch;
  RegAllocScratch work;
  RegAssignment ra;
  ASSERT_TRUE(assign_registers(p.code, p.regs, p.isa, loop.id(), frame, ra, scratch, work));
  std::vector<LiveAcross> live;
  live_across_calls(p.code, p.regs, ra, p.isa, loop.id(), work, live);
  ASSERT_EQ(live.size(), 1u);
  const LiveAcross& l = live[0];
  auto bit = [&](uint32_t r) { return 1u << ra.phys[r]; };
  EXPECT_TRUE(l.vec & bit(across));
  EXPECT_TRUE(l.vec & bit(looped)) << "live into the loop: read again after the call";
  EXPECT_EQ(l.vec & ~(bit(across) | bit(looped)), 0u) << "only the two vectors live across";
  EXPECT_TRUE(l.mask & bit(mask));
  EXPECT_TRUE(l.gp & bit(count) || !(bit(count) & 0x0fc7u))  // a callee-saved one needs no save
      << "the loop counter";
  EXPECT_TRUE(l.gp & bit(base) || !(bit(base) & 0x0fc7u));
  EXPECT_EQ(l.gp & ~0x0fc7u, 0u) << "only caller-saved general registers are saved";
}

}  // namespace
}  // namespace kiln::jit
