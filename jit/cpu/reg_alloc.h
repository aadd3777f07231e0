// Register assignment for the fast emitter (recording_assembler.h): a linear scan over the
// recorded instructions of one kernel function, in program order.
//
// Contract: `code` is a function's instructions on virtual registers (asmjit operands whose ids
// are virtual), written SSA-like: a register's first reference in program order writes it.
// Loops are the one exception this pass knows of: a backward jump to a bound label makes a loop,
// and a register referenced before the loop and again in it (or after it) stays live to the
// loop's end, so values the loop carries (pointers, counters, hoisted constants) survive its
// back edge. Each register then lives over [first, last] reference; a register whose last use
// is an instruction may be reused for that instruction's destination (every x86 instruction
// here reads its sources before it writes its destination). On AVX-512 the vector operands of
// instructions without an EVEX form (vmovdqu, vextractf128, ...) get xmm0-15 only.
//
// When registers do not suffice, the value live furthest ahead goes to memory (Poletto and
// Sarkar's linear scan; hoisted constants, which live to the end, first; a value written more
// than once, which a loop carries, and a spill's own reload or store registers, last): a hoisted
// constant is demoted to its pool address, any other value to a stack slot (64 bytes for a
// vector, 8 for a general or mask register), stored after each instruction that writes it (not
// reloaded before a whole move to it, which reads nothing of it). A vector use in an
// instruction's r/m slot then reads memory, any other use (a memory operand's base, a {k} write
// mask) a reload into a short-lived register right before it (which the next instruction reads
// too when it only reads the same value, with no label, jump or call between: one reload for
// `prefetcht0 [p+d]; prefetcht0 [p+d+64]`); then the scan runs again: on the
// same intervals less the demoted when every value it gave up is a constant read only from r/m
// slots (dropping its load moves no other interval; when that scan succeeds, the code is left
// as it is and the encoder drops the loads and reads the pool addresses: RegAssignment::kInPool),
// else on the rewritten code. The
// arguments are never spilled: running out of registers with only arguments live returns false
// (as does a scan that keeps finding more to spill), and the caller renders the kernel with
// asmjit's Compiler.
#pragma once
#include <asmjit/x86.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "jit/cpu/cpu_isa.h"

namespace kiln::jit {

// One recorded instruction (or pseudo-instruction) with up to 4 operands (no kernel emitter
// writes more: RecordingAssembler gives up on one that does). 80 bytes: every pass of a render
// walks these, so their size is a render's memory traffic (6 operands took 112).
struct RecordedInst {
  static constexpr asmjit::InstId kBindLabel = 0xFFFF0001u;    // ops[0]: the label
  static constexpr asmjit::InstId kEndFunction = 0xFFFF0002u;  // epilogue + ret
  // A call (RecordingAssembler::call_block): ops[0] the function's address (an immediate),
  // ops[1] its argument's block, ops[2] the save area (frame slots: no virtual register).
  static constexpr asmjit::InstId kCall = 0xFFFF0003u;
  asmjit::InstId id = 0;
  asmjit::InstOptions options = asmjit::InstOptions::kNone;
  asmjit::RegOnly extra;  // the {k} write mask of an AVX-512 instruction (asmjit leaves it raw)
  RecordedInst() { extra.reset(); }
  static constexpr int kOps = 4;
  asmjit::Operand_ ops[kOps] = {};  // unused ones none (all zero)
};
static_assert(sizeof(RecordedInst) == 80);

struct VirtReg {
  uint8_t group = 0;        // 0 general, 1 vector, 2 mask (k)
  int8_t fixed = -1;        // a physical register it must have from the entry (an argument)
  bool constant = false;    // loaded once, before the loops, from `pool`: may be demoted
  bool spill_temp = false;  // a reload or store register a spill's rewrite made
  asmjit::x86::Mem pool;
};

struct RegAssignment {
  // A hoisted constant demoted with no rewrite of the code (every value the scan gave up was
  // such a constant): it keeps its load and its register operands in `code`, and the encoder
  // drops the one and reads the pool address in the others (read_constants_from_pool below).
  static constexpr int8_t kInPool = -2;
  std::vector<int8_t> phys;  // per virtual register (-1: never referenced; kInPool)
  uint32_t gp_used = 0;      // bit per general register assigned
  int demoted = 0;           // constants demoted to memory
  bool in_pool = false;      // some of them left to the encoder (kInPool)
  int spilled = 0;           // other values given a stack slot
  int short_of = -1;         // when false: the group that ran out (VirtReg::group)
  int rounds = 0;            // scans it took (each after a round of spills)
};

// One register's [first, last] reference (loops taken into account) and its uses.
struct Interval {
  int32_t first = INT32_MAX, last = -1;
  int32_t uses = 0;
  int32_t fixed_uses = 0;  // vector uses outside an r/m slot (a memory home needs a reload)
  bool low = false;        // a vector operand of a VEX-only instruction: xmm0-15 only
  uint8_t defs = 0;        // instructions naming it as operand 0, up to 2: 2 is a value a loop
                           // carries (an accumulator, a cursor), spilled last (linear_scan)
};

// Where a spilled register lives: a stack slot, or (a demoted constant) its pool address.
struct SpillHome {
  bool stack = false;
  asmjit::x86::Mem mem;
};

// The scan's working memory, kept by the caller across renders beside its recording buffers
// (the workspace is pooled, render_workspace.h): a render allocates none of it. Its contents
// mean nothing between calls.
struct RegAllocScratch {
  std::vector<Interval> iv;
  std::vector<int32_t> bound;
  std::vector<std::pair<int32_t, int32_t>> loops;
  std::vector<uint32_t> at_pos, order, spills, chosen;
  std::vector<int32_t> dies_at, next_dying;
  std::vector<SpillHome> homes;
  std::vector<uint8_t> spilled, defined;
};

// Fills `out`; may rewrite `code` and append to `regs` (spills; constants demoted when nothing
// else was given up are left to the encoder instead: RegAssignment::kInPool). False when the
// registers do not suffice. `first_label`: the lowest label id the code binds (ids are the
// CodeHolder's, which grow over a pooled CodeHolder's life). `frame_bytes`: the stack slots taken
// so far (rbp keeps the frame when nonzero); spill slots are added after them. `scratch`: a buffer
// for the rewrites, kept by the caller across renders (a kernel's code runs to hundreds of KB:
// allocated anew, it is mapped and faulted in every time); `work`, the scan's other buffers,
// likewise. `demote_free_constants`: demote every hoisted constant read only from r/m slots before
// the first scan (the caller knows registers will run short: a pipelined loop), saving a round.
bool assign_registers(std::vector<RecordedInst>& code, std::vector<VirtReg>& regs, JitIsa isa,
                      uint32_t first_label, uint32_t& frame_bytes, RegAssignment& out,
                      std::vector<RecordedInst>& scratch, RegAllocScratch& work,
                      bool demote_free_constants = false);

// Where the encoder meets a constant the assignment left in its pool (RegAssignment::kInPool):
// its load before the loops, which it drops; and each instruction that reads it (in an r/m slot
// only: that is what let it stay there), whose operand it replaces by the pool address (the
// register's size): `in` as it is encoded.
inline bool loads_constant_left_in_pool(const RecordedInst& in, const RegAssignment& a) {
  const asmjit::Operand_& d = in.ops[0];
  return d.isReg() && asmjit::Operand::isVirtId(d.id()) && in.ops[1].isMem() &&
         a.phys[asmjit::Operand::virtIdToIndex(d.id())] == RegAssignment::kInPool;
}
inline void read_constants_from_pool(RecordedInst& in, const std::vector<VirtReg>& regs,
                                     const RegAssignment& a) {
  for (int j = 1; j < RecordedInst::kOps; ++j) {
    asmjit::Operand_& op = in.ops[j];
    if (!op.isReg() || !asmjit::Operand::isVirtId(op.id())) continue;
    const uint32_t r = asmjit::Operand::virtIdToIndex(op.id());
    if (a.phys[r] != RegAssignment::kInPool) continue;
    asmjit::x86::Mem m = regs[r].pool;
    m.setSize(op.as<asmjit::BaseReg>().size());
    op = m;
  }
}

// The physical registers (a bit each, per group) holding a value live across a call: referenced
// before it and after it (loops taken into account), assigned a register (a spilled value's
// home is the frame, which the call keeps).
struct LiveAcross {
  uint32_t gp = 0, vec = 0, mask = 0;
};
// One entry per RecordedInst::kCall of `code` (after assign_registers gave `a`), in order.
void live_across_calls(const std::vector<RecordedInst>& code, const std::vector<VirtReg>& regs,
                       const RegAssignment& a, JitIsa isa, uint32_t first_label,
                       RegAllocScratch& work, std::vector<LiveAcross>& out);

}  // namespace kiln::jit
