#include "jit/cpu/reg_alloc.h"

#include <algorithm>
#include <array>
#include <climits>
#include <tuple>
#include <utility>

namespace kiln::jit {

namespace {

using namespace asmjit;
namespace Inst = x86::Inst;

bool is_virt(uint32_t id) { return Operand::isVirtId(id); }
uint32_t index_of(uint32_t id) { return Operand::virtIdToIndex(id); }

// Per instruction id, asked of every recorded instruction in every scan (inst_traits()).
enum InstTrait : uint8_t {
  kRmLast = 1,   // its last register or memory operand is an r/m slot (rm_last())
  kVexOnly = 2,  // no EVEX form: its vector registers must be among the first 16 (VEX encodes
                 // 4 register bits: asmjit's Assembler would drop the fifth)
};
bool rm_last(InstId id);

// A table built once from rm_last() and asmjit's instruction database (on first use: a render
// may run during another file's static initialization), never destroyed (a std::array: a
// background render may run while the process exits): a switch and two table walks per
// instruction and scan were a tenth of a render.
inline uint8_t inst_traits(InstId id) {
  static const std::array<uint8_t, Inst::_kIdCount> table = [] {
    std::array<uint8_t, Inst::_kIdCount> t{};
    for (InstId i = 0; i < Inst::_kIdCount; ++i) {
      const x86::InstDB::InstInfo& info = x86::InstDB::infoById(i);
      t[i] = static_cast<uint8_t>((rm_last(i) ? kRmLast : 0) |
                                  (info.isVex() && !info.isEvex() ? kVexOnly : 0));
    }
    return t;
  }();
  return id < Inst::_kIdCount ? table[id] : 0;  // pseudo-instructions (kBindLabel, ...): none
}

int rm_slot(const RecordedInst& in);
bool vex_only(InstId id) { return inst_traits(id) & kVexOnly; }

// Each register's [first, last] reference, loops taken into account (reg_alloc.h).
void live_intervals(const std::vector<RecordedInst>& code, const std::vector<VirtReg>& regs,
                    uint32_t first_label, bool avx512, RegAllocScratch& work) {
  std::vector<Interval>& iv = work.iv;
  iv.assign(regs.size(), Interval{});
  std::vector<int32_t>& bound = work.bound;  // label id -> position
  bound.clear();
  std::vector<std::pair<int32_t, int32_t>>& loops = work.loops;
  loops.clear();
  const int32_t n = static_cast<int32_t>(code.size());
  for (int32_t i = 0; i < n; ++i) {
    const RecordedInst& in = code[i];
    if (in.id == RecordedInst::kBindLabel) {
      const uint32_t label = in.ops[0].id() - first_label;
      if (bound.size() <= label) bound.resize(label + 1, -1);
      bound[label] = i;
      continue;
    }
    if (in.ops[0].isLabel()) {  // a jump: backward to a bound label closes a loop
      const uint32_t label = in.ops[0].id() - first_label;
      if (label < bound.size() && bound[label] >= 0) loops.emplace_back(bound[label], i);
    }
    // One walk over the operands.
    auto see = [&](uint32_t r) {
      Interval& v = iv[r];
      v.first = std::min(v.first, i);  // a conditional move: first sight is no predictable branch
      v.last = i;
      ++v.uses;
    };
    const int rm = rm_slot(in);
    const bool low = avx512 && vex_only(in.id);
    for (int j = 0; j < RecordedInst::kOps; ++j) {
      const Operand_& op = in.ops[j];
      if (op.isReg()) {
        if (!is_virt(op.id())) continue;
        const uint32_t r = index_of(op.id());
        see(r);
        if (j == 0 && iv[r].defs < 2) ++iv[r].defs;
        if (op.as<BaseReg>().isVec()) {
          if (j != rm) ++iv[r].fixed_uses;
          if (low) iv[r].low = true;
        }
      } else if (op.isMem()) {
        const BaseMem& m = op.as<BaseMem>();
        if (m.hasBaseReg() && is_virt(m.baseId())) see(index_of(m.baseId()));
        if (m.hasIndexReg() && is_virt(m.indexId())) see(index_of(m.indexId()));
      }
    }
    if (in.extra.isReg() && is_virt(in.extra.id())) see(index_of(in.extra.id()));
  }
  for (size_t r = 0; r < regs.size(); ++r)
    if (regs[r].fixed >= 0 && iv[r].last >= 0) iv[r].first = 0;
  // Live into a loop (referenced before its head and in or after it): live to its end.
  // In order of their heads (then ends) one pass suffices: an extension only reaches loops
  // whose heads come later (a nested loop ends before its enclosing one, which came first).
  // Only loops whose heads lie after the register's first reference can extend it: the scan
  // starts at the first such head (a binary search), so a value born inside the last loop, as
  // most are, looks at none.
  std::sort(loops.begin(), loops.end());
  if (!loops.empty())
    for (Interval& v : iv) {
      if (v.last < loops.front().first) continue;
      auto l = std::upper_bound(loops.begin(), loops.end(), v.first,
                                [](int32_t first, const std::pair<int32_t, int32_t>& loop) {
                                  return first < loop.first;
                                });
      for (; l != loops.end() && l->first <= v.last; ++l)
        if (v.last < l->second) v.last = l->second;
    }
}

// The instructions whose last non-immediate operand is an r/m slot (a memory operand may take
// a register's place there) among those a constant may feed.
bool rm_last(InstId id) {
  switch (id) {
    case Inst::kIdVaddps:
    case Inst::kIdVaddpd:
    case Inst::kIdAddps:
    case Inst::kIdAddpd:
    case Inst::kIdVsubps:
    case Inst::kIdVsubpd:
    case Inst::kIdSubps:
    case Inst::kIdSubpd:
    case Inst::kIdVmulps:
    case Inst::kIdVmulpd:
    case Inst::kIdMulps:
    case Inst::kIdMulpd:
    case Inst::kIdVdivps:
    case Inst::kIdVdivpd:
    case Inst::kIdDivps:
    case Inst::kIdDivpd:
    case Inst::kIdVminps:
    case Inst::kIdVminpd:
    case Inst::kIdMinps:
    case Inst::kIdMinpd:
    case Inst::kIdVmaxps:
    case Inst::kIdVmaxpd:
    case Inst::kIdMaxps:
    case Inst::kIdMaxpd:
    case Inst::kIdVpandd:
    case Inst::kIdVpord:
    case Inst::kIdVpxord:
    case Inst::kIdVpandnd:
    case Inst::kIdVandps:
    case Inst::kIdVorps:
    case Inst::kIdVxorps:
    case Inst::kIdVandnps:
    case Inst::kIdAndps:
    case Inst::kIdOrps:
    case Inst::kIdXorps:
    case Inst::kIdAndnps:
    case Inst::kIdVcmpps:
    case Inst::kIdVcmppd:
    case Inst::kIdCmpps:
    case Inst::kIdCmppd:
    case Inst::kIdVpaddd:
    case Inst::kIdVpaddq:
    case Inst::kIdPaddd:
    case Inst::kIdPaddq:
    case Inst::kIdVpsubd:
    case Inst::kIdVpsubq:
    case Inst::kIdPsubd:
    case Inst::kIdPsubq:
    case Inst::kIdVpcmpd:
    case Inst::kIdVpcmpq:
    case Inst::kIdVpcmpeqd:
    case Inst::kIdVpcmpeqq:
    case Inst::kIdPcmpeqd:
    case Inst::kIdVpcmpgtd:
    case Inst::kIdVpcmpgtq:
    case Inst::kIdPcmpgtd:
    case Inst::kIdVpmulld:
    case Inst::kIdVpmullq:
    case Inst::kIdVpmuludq:
    case Inst::kIdPmuludq:
    case Inst::kIdVfmadd213ps:
    case Inst::kIdVfmadd213pd:
    case Inst::kIdVfmadd231ps:
    case Inst::kIdVfmadd231pd:
    case Inst::kIdVscalefps:
    case Inst::kIdVscalefpd:
    case Inst::kIdVrndscaleps:
    case Inst::kIdVrndscalepd:
    case Inst::kIdVmovaps:
    case Inst::kIdVmovapd:
    case Inst::kIdMovaps:
    case Inst::kIdMovapd:
    case Inst::kIdVmovdqa:
    case Inst::kIdMovdqa:
      return true;
    default:
      return false;
  }
}

int rm_slot(const RecordedInst& in) {
  if (!(inst_traits(in.id) & kRmLast)) return -1;
  int last = -1;
  for (int j = 0; j < RecordedInst::kOps; ++j)
    if (in.ops[j].isReg() || in.ops[j].isMem()) last = j;
  return last >= 1 ? last : -1;
}

// Moves that write the whole of a register operand 0 and read nothing else of it.
bool whole_move(InstId id) {
  switch (id) {
    case Inst::kIdMov:
    case Inst::kIdKmovw:
    case Inst::kIdMovaps:
    case Inst::kIdMovups:
    case Inst::kIdMovapd:
    case Inst::kIdMovdqa:
    case Inst::kIdVmovaps:
    case Inst::kIdVmovups:
    case Inst::kIdVmovapd:
    case Inst::kIdVmovupd:
    case Inst::kIdVmovdqa:
    case Inst::kIdVmovdqu:
      return true;
    default:
      return false;
  }
}

// Where a spilled register's value lives: a hoisted constant's pool address, or a stack slot.
using Home = SpillHome;

// Rewrites `code` so that the registers with a home have no register of their own (reg_alloc.h):
// a constant's load before the loops goes; an instruction that writes a spilled value writes a
// short-lived register stored to its slot right after (reloaded first unless this is the value's
// first definition: SSE's two-operand forms, merge masking and read-modify-write integer
// instructions read it too); a vector use in the r/m slot reads the home, any other use
// (memory bases included) a short-lived register loaded right before the instruction. Loads
// and stores move no flags, so a compare and its jump may be split by them.
void spill(std::vector<RecordedInst>& code, std::vector<VirtReg>& regs,
           const std::vector<Home>& homes, const std::vector<uint8_t>& spilled, JitIsa isa,
           std::vector<RecordedInst>& out, std::vector<uint8_t>& defined) {
  out.clear();
  out.reserve(code.size() + code.size() / 4);
  const InstId vmove = isa == JitIsa::Sse2 ? Inst::kIdMovups : Inst::kIdVmovups;
  auto is_spilled = [&](uint32_t id) {
    return is_virt(id) && index_of(id) < spilled.size() && spilled[index_of(id)];
  };
  defined.assign(spilled.size(), 0);
  // The reloads of the instruction before (spilled register -> its short-lived register, and
  // the register's size): an instruction right after it that only reads one of those values
  // reads the same register instead of loading it again (`prefetcht0 [p+d]; prefetcht0
  // [p+d+64]` with d spilled, a demoted constant in two unrolled copies' vminps). Not across a
  // label, a jump or a call, nor for a value the instruction before wrote.
  uint32_t carried_from[8], carried_to[8], carried_size[8];
  int carried = 0;
  for (RecordedInst& in : code) {
    // A move writes all of its register operand 0 without reading it (unless merge-masked):
    // a spilled destination needs no reload before it.
    const bool overwrites =
        whole_move(in.id) && !(in.extra.isReg() && in.extra.id() != 0 &&
                               !Support::test(in.options, InstOptions::kX86_ZMask));
    if (in.id != RecordedInst::kBindLabel && in.ops[0].isReg() && is_spilled(in.ops[0].id()) &&
        !homes[index_of(in.ops[0].id())].stack && in.ops[1].isMem()) {
      carried = 0;
      continue;  // a demoted constant's load before the loops
    }
    const int rm = rm_slot(in);
    uint32_t from[8], to[8], size[8];
    bool wrote[8] = {};
    int n = 0;
    RecordedInst store;  // only operand 0 is written: one store at most
    bool has_store = false;
    // The short-lived register standing for spilled register r in this instruction (`view`:
    // how a vector operand names it; general registers move as 64 bits).
    auto temp_for = [&](uint32_t r, const Operand_* view) {
      for (int t = 0; t < n; ++t)
        if (from[t] == r) return to[t];
      const uint8_t group = regs[r].group;
      const uint32_t bytes = group == 1 ? view->as<BaseReg>().size() : 8;
      const bool writes =
          in.ops[0].isReg() && is_virt(in.ops[0].id()) && index_of(in.ops[0].id()) == r;
      for (int t = 0; t < carried && !writes; ++t)
        if (carried_from[t] == r && carried_size[t] == bytes) {
          from[n] = r;
          size[n] = bytes;
          to[n++] = carried_to[t];
          return carried_to[t];
        }
      VirtReg v;
      v.group = group;
      v.spill_temp = true;
      regs.push_back(v);
      const uint32_t id = Operand::indexToVirtId(static_cast<uint32_t>(regs.size() - 1));
      from[n] = r;
      size[n] = bytes;
      to[n++] = id;
      Operand_ reg = group == 0   ? Operand_(x86::Gpq(id))
                     : group == 2 ? Operand_(x86::KReg(id))
                                  : *view;
      if (group == 1) reg.as<BaseReg>().setId(id);
      x86::Mem m = homes[r].mem;
      m.setSize(group == 0 ? 8 : group == 2 ? 2 : reg.as<BaseReg>().size());
      const InstId move = group == 0 ? Inst::kIdMov : group == 2 ? Inst::kIdKmovw : vmove;
      if (!writes || (defined[r] && !overwrites)) {
        RecordedInst load;
        load.id = move;
        load.ops[0] = reg;
        load.ops[1] = m;
        out.push_back(load);
      }
      if (writes) {
        wrote[n - 1] = true;
        defined[r] = 1;
        has_store = true;
        store.id = move;
        store.ops[0] = m;
        store.ops[1] = reg;
      }
      return id;
    };
    for (int j = 0; j < RecordedInst::kOps; ++j) {
      Operand_& op = in.ops[j];
      if (op.isReg() && is_spilled(op.id())) {
        const uint32_t r = index_of(op.id());
        if (j == rm && j != 0 && regs[r].group == 1) {
          x86::Mem m = homes[r].mem;
          m.setSize(op.as<BaseReg>().size());
          op = m;
          continue;
        }
        op.as<BaseReg>().setId(temp_for(r, &op));
      } else if (op.isMem()) {
        BaseMem& m = op.as<BaseMem>();
        if (m.hasBaseReg() && is_spilled(m.baseId()))
          m.setBaseId(temp_for(index_of(m.baseId()), nullptr));
        if (m.hasIndexReg() && is_spilled(m.indexId()))
          m.setIndexId(temp_for(index_of(m.indexId()), nullptr));
      }
    }
    if (in.extra.isReg() && is_spilled(in.extra.id()))  // a {k} write mask
      in.extra.setId(temp_for(index_of(in.extra.id()), nullptr));
    out.push_back(in);
    if (has_store) out.push_back(store);
    carried = 0;
    const bool straight = in.id != RecordedInst::kBindLabel && in.id != RecordedInst::kCall &&
                          in.id != RecordedInst::kEndFunction && !in.ops[0].isLabel();
    for (int t = 0; t < n && straight; ++t)
      if (!wrote[t]) {
        carried_from[carried] = from[t];
        carried_to[carried] = to[t];
        carried_size[carried++] = size[t];
      }
  }
  code.swap(out);
}

// The general registers handed out first: the caller-saved ones (rax rcx rdx rsi rdi r8-r11),
// which cost no push and pop.
constexpr uint32_t kGpCallerSaved = 0x0fc7u;

// One linear scan. False, with the group that ran out in `short_of`, when registers ran out.
// Vector and general shortages are met by choosing values to spill (`spills`; the scan then
// goes on as if they had none): the result is then false with short_of -1, and the caller
// rewrites the code and scans again.
bool linear_scan(const std::vector<Interval>& iv, const std::vector<VirtReg>& regs, JitIsa isa,
                 bool reserve_rbp, RegAssignment& out, int& short_of, std::vector<uint32_t>& spills,
                 RegAllocScratch& work) {
  const size_t nr = regs.size();
  // The live registers by first reference (a counting sort: positions are dense), arguments
  // first among equals: they own their registers.
  int32_t end = 0;
  for (uint32_t r = 0; r < nr; ++r)
    if (iv[r].last >= 0) end = std::max(end, iv[r].first + 1);
  std::vector<uint32_t>& at_pos = work.at_pos;
  at_pos.assign(static_cast<size_t>(end) + 1, 0);
  for (uint32_t r = 0; r < nr; ++r)
    if (iv[r].last >= 0) ++at_pos[iv[r].first + 1];
  for (int32_t i = 0; i < end; ++i) at_pos[i + 1] += at_pos[i];
  std::vector<uint32_t>& order = work.order;
  order.resize(at_pos[end]);
  for (bool args : {true, false})
    for (uint32_t r = 0; r < nr; ++r)
      if (iv[r].last >= 0 && (regs[r].fixed >= 0) == args) order[at_pos[iv[r].first]++] = r;

  out.phys.assign(nr, -1);
  out.gp_used = 0;
  // Per group: the busy physical registers (rsp, rbp when it keeps the frame, k0 and those the
  // ISA lacks never free) and each one's holder. A register is freed when the scan reaches its
  // holder's last reference: the holders are listed by that position (dies_at / next_dying),
  // and a cursor releases them as the scan moves on: no heap, whose branches were a fifth of a
  // render.
  const int nphys[3] = {16, isa == JitIsa::Avx512 ? 32 : 16, 8};
  uint32_t busy[3];
  for (int g = 0; g < 3; ++g) busy[g] = nphys[g] == 32 ? 0u : ~((1u << nphys[g]) - 1);
  busy[0] |= 1u << 4 | (reserve_rbp ? 1u << 5 : 0u);  // rsp; rbp keeps the frame
  busy[2] |= 1u;                                      // k0 (no mask)
  const uint32_t reserved[3] = {busy[0], busy[1], busy[2]};
  uint32_t owner[3][32];
  int32_t last_pos = 0;
  for (uint32_t r = 0; r < nr; ++r) last_pos = std::max(last_pos, iv[r].last);
  std::vector<int32_t>& dies_at = work.dies_at;
  std::vector<int32_t>& next_dying = work.next_dying;
  dies_at.assign(static_cast<size_t>(last_pos) + 1, -1);
  next_dying.assign(nr, -1);
  int32_t released = -1;  // positions whose dying holders are released
  for (uint32_t r : order) {
    const int g = regs[r].group;
    const int32_t at = iv[r].first;
    for (; released < at; ++released)  // holders whose last reference is at or before `at`
      for (int32_t d = dies_at[released + 1]; d >= 0; d = next_dying[d]) {
        const int q = out.phys[d];
        const int gd = regs[d].group;
        if (q >= 0 && owner[gd][q] == static_cast<uint32_t>(d)) busy[gd] &= ~(1u << q);
      }
    int p = -1;
    const uint32_t allowed = iv[r].low ? 0xffffu : 0xffffffffu;
    const uint32_t free = allowed & ~busy[g];
    if (regs[r].fixed >= 0) {
      p = regs[r].fixed;
      if (busy[g] & (1u << p)) return short_of = g, false;
    } else if (g == 0) {
      if (free & kGpCallerSaved)
        p = __builtin_ctz(free & kGpCallerSaved);
      else if (free)
        p = __builtin_ctz(free);
    } else if (free) {
      p = __builtin_ctz(free);
    }
    if (p < 0) {
      // Out of registers: the value live furthest ahead (this one or an active one) goes to
      // memory (Poletto and Sarkar's linear scan), a hoisted constant first, then the one with
      // the fewest uses outside r/m slots (each of those reloads it; an r/m use reads its home
      // for free), then the least used. Arguments keep their registers. A value written more
      // than once (what a loop carries: a sum's accumulator, a cursor) goes last whatever its
      // reach: in memory, each iteration's update waits on the last one's store (softmax's
      // sum(exp) on AVX2 at unroll 4: 2.55 TSC cycles per element with its accumulator
      // spilled, 1.8 at unroll 2 where nothing was). Not before a spill's own reload or
      // store register, though: spilling one makes another, round after round.
      uint32_t victim = r;
      auto key = [&](uint32_t x) {
        const bool rather = iv[x].defs < 2 && !regs[x].spill_temp;
        return std::make_tuple(regs[x].constant, rather, iv[x].last, -iv[x].fixed_uses,
                               -iv[x].uses);
      };
      for (uint32_t m = allowed & busy[g] & ~reserved[g]; m; m &= m - 1) {
        const uint32_t c = owner[g][__builtin_ctz(m)];
        if (regs[c].fixed < 0 && (regs[victim].fixed >= 0 || key(c) > key(victim))) victim = c;
      }
      if (regs[victim].fixed >= 0) return short_of = g, false;
      spills.push_back(victim);
      if (victim == r) continue;
      p = out.phys[victim];
      out.phys[victim] = -1;
    }
    owner[g][p] = r;
    if (iv[r].last > at) {  // else dead past this instruction already: free for the next
      busy[g] |= 1u << p;
      next_dying[r] = dies_at[iv[r].last];
      dies_at[iv[r].last] = static_cast<int32_t>(r);
    }
    out.phys[r] = static_cast<int8_t>(p);
    if (g == 0) out.gp_used |= 1u << p;
  }
  if (!spills.empty()) return short_of = -1, false;
  return true;
}

}  // namespace

bool assign_registers(std::vector<RecordedInst>& code, std::vector<VirtReg>& regs, JitIsa isa,
                      uint32_t first_label, uint32_t& frame_bytes, RegAssignment& out,
                      std::vector<RecordedInst>& scratch, RegAllocScratch& work,
                      bool demote_free_constants) {
  out.demoted = out.spilled = 0;
  out.in_pool = false;
  out.rounds = 0;
  std::vector<Home>& homes = work.homes;
  homes.clear();
  for (int attempt = 0; attempt < 32; ++attempt) {
    live_intervals(code, regs, first_label, isa == JitIsa::Avx512, work);
    std::vector<Interval>& iv = work.iv;
    // A free demotion: a hoisted constant read only from r/m slots (its one other reference is
    // its load before the loops). Demoting it drops that load and turns its uses into memory
    // operands: no other register's interval moves (positions only close up), so the scan can
    // run again on these intervals, less the demoted, instead of on the rewritten code.
    auto free_demotion = [&](uint32_t r) {
      return regs[r].constant && regs[r].group == 1 && iv[r].last >= 0 && iv[r].fixed_uses <= 1;
    };
    std::vector<uint32_t>& spills = work.spills;  // chosen this attempt, to be rewritten
    spills.clear();
    bool done = false, scanned = attempt > 0 || !demote_free_constants, bulk = attempt == 0;
    for (;;) {
      std::vector<uint32_t>& chosen = work.chosen;
      chosen.clear();
      int short_of = -1;
      if (scanned) {
        ++out.rounds;
        done = linear_scan(iv, regs, isa, frame_bytes > 0, out, short_of, chosen, work);
        out.short_of = short_of;
        if (done) break;
        if (short_of >= 0 || chosen.empty()) return false;
      }
      scanned = true;
      if (std::exchange(bulk, false)) {
        // Short of registers (or told so: `demote_free_constants`, before a first scan): every
        // free demotion at once, as the scans would choose them one round after another.
        // Reading them from the pool costs no instruction.
        for (uint32_t r = 0; r < regs.size(); ++r)
          if (free_demotion(r) && std::find(chosen.begin(), chosen.end(), r) == chosen.end())
            chosen.push_back(r);
      }
      const bool all_free = std::all_of(chosen.begin(), chosen.end(), free_demotion);
      spills.insert(spills.end(), chosen.begin(), chosen.end());
      if (!all_free) break;  // reloads or stack slots: rewrite, then scan the new code
      for (uint32_t r : chosen) iv[r] = Interval{};
    }
    homes.resize(regs.size());
    std::vector<uint8_t>& spilled = work.spilled;
    spilled.assign(regs.size(), 0);
    for (uint32_t r : spills) {
      spilled[r] = 1;
      if (regs[r].constant) {
        homes[r] = {false, regs[r].pool};
        ++out.demoted;
      } else {  // a slot of the frame (newStack's slots come first): 64 bytes, or 8
        const uint32_t size = regs[r].group == 1 ? 64 : 8;  // (a mask takes 2 of its 8)
        frame_bytes = (frame_bytes + size - 1) / size * size;
        homes[r] = {true, x86::ptr(x86::rsp, static_cast<int32_t>(frame_bytes))};
        frame_bytes += size;
        ++out.spilled;
      }
    }
    if (spills.empty()) return done;
    if (done) {
      // Every value given up is a constant read only from r/m slots (a scan that found more to
      // spill ends the loop above with done false): no interval moves, and the encoder reads
      // the pool address in place (read_constants_from_pool, reg_alloc.h). Rewriting the code for
      // it was part of the 14% of in-situ render samples spent in spill() (kiln-perf's gelu,
      // softmax, layer norm and xent jobs, 2026-12-03).
      for (uint32_t r : spills) out.phys[r] = RegAssignment::kInPool;
      out.in_pool = true;
      return true;
    }
    spill(code, regs, homes, spilled, isa, scratch, work.defined);
  }
  return false;
}

void live_across_calls(const std::vector<RecordedInst>& code, const std::vector<VirtReg>& regs,
                       const RegAssignment& a, JitIsa isa, uint32_t first_label,
                       RegAllocScratch& work, std::vector<LiveAcross>& out) {
  out.clear();
  bool any = false;
  for (const RecordedInst& in : code) any = any || in.id == RecordedInst::kCall;
  if (!any) return;
  live_intervals(code, regs, first_label, isa == JitIsa::Avx512, work);
  const std::vector<Interval>& iv = work.iv;
  const int32_t n = static_cast<int32_t>(code.size());
  for (int32_t p = 0; p < n; ++p) {
    if (code[p].id != RecordedInst::kCall) continue;
    LiveAcross& l = out.emplace_back();
    for (size_t r = 0; r < regs.size() && r < a.phys.size(); ++r) {
      if (a.phys[r] < 0 || iv[r].first >= p || iv[r].last <= p) continue;
      const uint32_t bit = 1u << a.phys[r];
      (regs[r].group == 0 ? l.gp : regs[r].group == 1 ? l.vec : l.mask) |= bit;
    }
    l.gp &= kGpCallerSaved;  // the callee keeps rbx, rbp, r12-r15
  }
}

}  // namespace kiln::jit
