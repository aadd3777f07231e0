// RecordingAssembler's rearrangements of recorded code before registers are assigned:
// interleave() weaves unrolled copies, pipeline_split() / pipeline() software-pipeline an
// unrolled loop (recording_assembler.h has their contracts).
#include <algorithm>
#include <cstring>

#include "jit/cpu/recording_assembler.h"

namespace kiln::jit {

using namespace asmjit;
namespace Inst = x86::Inst;

bool RecordingAssembler::interleave(const std::vector<Range>& copies) {
  if (copies.size() < 2) return true;
  size_t longest = 0;
  for (size_t u = 0; u < copies.size(); ++u) {
    if (u > 0 && copies[u].first != copies[u - 1].second) return false;
    for (size_t i = copies[u].first; i < copies[u].second; ++i) {
      const RecordedInst& in = main_[i];
      if (in.id == RecordedInst::kBindLabel || in.id == RecordedInst::kEndFunction ||
          in.ops[0].isLabel())
        return false;  // a label, a jump
    }
    longest = std::max(longest, copies[u].second - copies[u].first);
  }
  scratch_.clear();
  for (size_t i = 0; i < longest; ++i)
    for (const Range& c : copies)
      if (c.first + i < c.second) scratch_.push_back(main_[c.first + i]);
  std::copy(scratch_.begin(), scratch_.end(),
            main_.begin() + static_cast<std::ptrdiff_t>(copies.front().first));
  return true;
}

namespace {

// Calls fn(index, operand) for every virtual register `in` references: `operand` is the
// register operand, or null for a memory operand's base or index and for the write mask.
template <class Fn>
void visit_vregs(const RecordedInst& in, Fn fn) {
  for (const Operand_& op : in.ops) {
    if (op.isReg()) {
      if (Operand::isVirtId(op.id())) fn(Operand::virtIdToIndex(op.id()), &op);
    } else if (op.isMem()) {
      const BaseMem& m = op.as<BaseMem>();
      if (m.hasBaseReg() && Operand::isVirtId(m.baseId()))
        fn(Operand::virtIdToIndex(m.baseId()), nullptr);
      if (m.hasIndexReg() && Operand::isVirtId(m.indexId()))
        fn(Operand::virtIdToIndex(m.indexId()), nullptr);
    }
  }
  if (in.extra.isReg() && Operand::isVirtId(in.extra.id()))
    fn(Operand::virtIdToIndex(in.extra.id()), nullptr);
}

// Renames the virtual registers of `in`: index -> fn(index).
template <class Fn>
void map_vregs(RecordedInst& in, Fn fn) {
  auto id = [&](uint32_t v) { return Operand::indexToVirtId(fn(Operand::virtIdToIndex(v))); };
  for (Operand_& op : in.ops) {
    if (op.isReg()) {
      if (Operand::isVirtId(op.id())) op.as<BaseReg>().setId(id(op.id()));
    } else if (op.isMem()) {
      BaseMem& m = op.as<BaseMem>();
      if (m.hasBaseReg() && Operand::isVirtId(m.baseId())) m.setBaseId(id(m.baseId()));
      if (m.hasIndexReg() && Operand::isVirtId(m.indexId())) m.setIndexId(id(m.indexId()));
    }
  }
  if (in.extra.isReg() && Operand::isVirtId(in.extra.id())) in.extra.setId(id(in.extra.id()));
}

// The position of each virtual register's first reference in `main`, into `first` (0 for those
// the hoisted code references: it runs before everything; and for the arguments, held from the
// entry: a kernel whose loop body is the first to read `params` (a broadcast scalar parameter)
// would otherwise have its first unrolled copy "make" the argument, and pipeline() refused such
// copies as different, sending the kernel to the Compiler).
void first_references(const std::vector<RecordedInst>& main,
                      const std::vector<RecordedInst>& hoisted, const std::vector<VirtReg>& regs,
                      std::vector<uint32_t>& first) {
  first.assign(regs.size(), UINT32_MAX);
  for (size_t v = 0; v < regs.size(); ++v)
    if (regs[v].fixed >= 0) first[v] = 0;
  for (const RecordedInst& in : hoisted)
    visit_vregs(in, [&](uint32_t v, const Operand_*) { first[v] = 0; });
  for (size_t i = 0; i < main.size(); ++i)
    visit_vregs(main[i], [&](uint32_t v, const Operand_*) {
      if (first[v] == UINT32_MAX) first[v] = static_cast<uint32_t>(i);
    });
}

}  // namespace

// Appends to copy_regs_ the registers the copy at `r` makes (first referenced inside it), in
// order of first reference, with the positions of their first and last reference in the copy
// and their widest register operand (none if only a memory base or a mask); returns their
// count. first_ and slot_ (all -1, left so) are set up by the caller.
size_t RecordingAssembler::own_registers(const Range& r) {
  const size_t at = copy_regs_.size();
  for (size_t i = 0; i < r.second - r.first; ++i)
    visit_vregs(main_[r.first + i], [&](uint32_t v, const Operand_* op) {
      if (first_[v] < r.first || first_[v] >= r.second) return;
      if (slot_[v] < 0) {
        slot_[v] = static_cast<int32_t>(copy_regs_.size() - at);
        copy_regs_.push_back(CopyReg{v, static_cast<int32_t>(i), static_cast<int32_t>(i), {}});
      }
      CopyReg& c = copy_regs_[at + static_cast<size_t>(slot_[v])];
      c.hi = static_cast<int32_t>(i);
      if (op != nullptr && (c.op.isNone() || op->as<BaseReg>().size() > c.op.as<BaseReg>().size()))
        c.op = *op;
    });
  for (size_t k = at; k < copy_regs_.size(); ++k) slot_[copy_regs_[k].reg] = -1;
  return copy_regs_.size() - at;
}

size_t RecordingAssembler::pipeline_split(const std::vector<Range>& copies) {
  if (copies.empty()) return 0;
  const size_t L = copies[0].second - copies[0].first;
  if (L < 4) return 0;
  for (size_t i = copies[0].first; i < copies.back().second; ++i) {
    const RecordedInst& in = main_[i];
    if (in.id == RecordedInst::kBindLabel || in.id == RecordedInst::kEndFunction ||
        in.ops[0].isLabel())
      return 0;  // a label, a jump
  }
  first_references(main_, hoisted_, regs_, first_);
  slot_.assign(regs_.size(), -1);
  copy_regs_.clear();
  const size_t nown = own_registers(copies[0]);
  const CopyReg* c0 = copy_regs_.data();
  const size_t target = L / 5;
  auto dist = [&](size_t s) { return s > target ? s - target : target - s; };
  size_t split = 0, best = SIZE_MAX;
  for (size_t s = std::max<size_t>(1, L / 8); s <= std::max<size_t>(1, L / 3); ++s) {
    size_t crossing = 0;
    bool ok = true;
    for (size_t k = 0; k < nown; ++k)
      if (c0[k].lo < static_cast<int32_t>(s) && c0[k].hi >= static_cast<int32_t>(s)) {
        ++crossing;
        ok = ok && regs_[c0[k].reg].group == kVec && !c0[k].op.isNone();
      }
    if (ok && (crossing < best || (crossing == best && dist(s) < dist(split)))) {
      best = crossing;
      split = s;
    }
  }
  if (split == 0 || best * copies.size() > 16) return 0;
  return copies.size() * woven_peak(copies[0], split) <= kPipelineVectorBudget ? split : 0;
}

// Sets last_head_[k] to the last of the copy's first `split` instructions that references its
// register c[k] (-1: none). slot_ (all -1) maps the registers meanwhile and is left so.
void RecordingAssembler::last_head_references(const Range& copy, const CopyReg* c, size_t n,
                                              size_t split) {
  for (size_t k = 0; k < n; ++k) slot_[c[k].reg] = static_cast<int32_t>(k);
  last_head_.assign(n, -1);
  for (size_t i = 0; i < split; ++i)
    visit_vregs(main_[copy.first + i], [&](uint32_t v, const Operand_*) {
      if (slot_[v] >= 0) last_head_[static_cast<size_t>(slot_[v])] = static_cast<int32_t>(i);
    });
  for (size_t k = 0; k < n; ++k) slot_[c[k].reg] = -1;
}

// The most vector values one copy holds at once in the pipelined loop, its tail woven with the
// next vectors' head (pipeline() below): a value of the tail or of the head lives over its
// references (the head's and the tail's positions counted from the loop's top), a crossing value
// takes two registers: the carried one (read by the tail up to its last reference, written
// again by the move once the next head is done with it, live to the loop's end) and the next
// head's (from its definition to that move). copy_regs_ holds the copy's registers
// (pipeline_split); slot_ is all -1 and left so.
size_t RecordingAssembler::woven_peak(const Range& copy, size_t split) {
  const CopyReg* c = copy_regs_.data();
  const size_t n = copy_regs_.size();
  last_head_references(copy, c, n, split);
  const int32_t S = static_cast<int32_t>(split);
  const int32_t tail = static_cast<int32_t>(copy.second - copy.first) - S;
  int32_t peak = 0;
  for (int32_t i = 0; i < std::max(tail, S); ++i) {
    int32_t live = 0;
    for (size_t k = 0; k < n; ++k) {
      if (regs_[c[k].reg].group != kVec) continue;
      const int32_t lo = c[k].lo, hi = c[k].hi;
      if (lo >= S) {
        live += lo <= S + i && S + i <= hi;
      } else if (hi < S) {
        live += lo <= i && i <= hi;
      } else {
        const int32_t moved = std::max(hi - S, last_head_[k]);
        live += i <= hi - S || i >= moved;
        live += lo <= i && i <= moved;
      }
    }
    peak = std::max(peak, live);
  }
  return static_cast<size_t>(peak);
}

bool RecordingAssembler::pipeline(const std::vector<Range>& head, const std::vector<Range>& tail,
                                  const std::vector<Range>& next, const std::vector<Range>& drain,
                                  size_t split) {
  const size_t U = head.size();
  if (U == 0 || tail.size() != U || next.size() != U || drain.size() != U) return false;
  const size_t L = head[0].second - head[0].first;
  if (L < 4) return false;
  const std::vector<Range>* groups[4] = {&head, &tail, &next, &drain};
  for (const std::vector<Range>* g : groups)
    for (size_t u = 0; u < U; ++u) {
      const Range& r = (*g)[u];
      if (r.second - r.first != L || (u > 0 && r.first != (*g)[u - 1].second)) return false;
      for (size_t i = 0; i < L; ++i) {
        const RecordedInst& in = main_[r.first + i];
        if (in.id == RecordedInst::kBindLabel || in.id == RecordedInst::kEndFunction ||
            in.ops[0].isLabel() || in.id != main_[head[0].first + i].id)
          return false;  // a label, a jump, or copies that differ
      }
    }
  if (next[0].first != tail[U - 1].second || head[U - 1].second > tail[0].first ||
      next[U - 1].second > drain[0].first || (anchor_ != UINT32_MAX && anchor_ > head[0].first))
    return false;

  if (split == 0 || split >= L) return false;
  first_references(main_, hoisted_, regs_, first_);
  slot_.assign(regs_.size(), -1);
  copy_regs_.clear();
  copy_regs_.reserve(4 * U * 2 * L);  // room for every copy's registers: no regrowth per copy
  size_t nown = 0;
  for (int g = 0; g < 4; ++g)
    for (size_t u = 0; u < U; ++u) {
      const size_t n = own_registers((*groups[g])[u]);
      if (g == 0 && u == 0) nown = n;
      if (n != nown) return false;
      const CopyReg* a = copy_regs_.data() + copy_regs_.size() - n;
      const CopyReg* b = copy_regs_.data();
      for (size_t k = 0; k < n; ++k)
        if (a[k].lo != b[k].lo || a[k].hi != b[k].hi ||
            regs_[a[k].reg].group != regs_[b[k].reg].group)
          return false;
    }
  // The registers of copy u of group g: regs(g, u)[k] (copies in the order they were added).
  auto regs = [&](int g, size_t u) {
    return copy_regs_.data() + (static_cast<size_t>(g) * U + u) * nown;
  };
  const CopyReg* c0 = regs(0, 0);
  std::vector<size_t>& crossing = crossing_;  // the copy's values that cross the split: a few
  crossing.clear();
  for (size_t k = 0; k < nown; ++k)
    if (c0[k].lo < static_cast<int32_t>(split) && c0[k].hi >= static_cast<int32_t>(split))
      crossing.push_back(k);
  // A crossing value's last reference in the head.
  last_head_references(head[0], c0, nown, split);
  const std::vector<int32_t>& last_head = last_head_;

  // A tail's instruction reading its crossing values from the prologue copy's registers.
  // (slot_ maps the copy's crossing registers to their index while it is read: with_slots.)
  auto tail_inst = [&](const Range& r, const CopyReg* from, size_t i) {
    RecordedInst in = main_[r.first + i];
    map_vregs(in, [&](uint32_t v) {
      const int32_t k = slot_[v];
      return k >= 0 ? from[static_cast<size_t>(k)].reg : v;
    });
    return in;
  };
  auto with_slots = [&](const CopyReg* mine, bool on) {
    for (size_t k : crossing) slot_[mine[k].reg] = on ? static_cast<int32_t>(k) : -1;
  };
  const size_t tl = L - split;
  std::vector<RecordedInst>& out = scratch_;
  out.clear();
  out.reserve(main_.size() + nown * U);  // with the loop's moves
  size_t pos = 0;
  while (pos < main_.size()) {
    if (pos == head[0].first) {
      for (size_t i = 0; i < split; ++i)
        for (size_t u = 0; u < U; ++u) out.push_back(main_[head[u].first + i]);
      pos = head[U - 1].second;
    } else if (pos == tail[0].first) {
      for (size_t i = 0; i < std::max(tl, split); ++i) {
        for (size_t u = 0; u < U; ++u) {
          if (i < tl) {
            with_slots(regs(1, u), true);
            out.push_back(tail_inst(tail[u], regs(0, u), split + i));
            with_slots(regs(1, u), false);
          }
          if (i < split) out.push_back(main_[next[u].first + i]);
        }
        // The next heads' values move into the prologue's registers once both the tail's last
        // read of the old value and the head's last reference to the new one are behind.
        for (size_t k : crossing) {
          const size_t at = std::max<size_t>(static_cast<size_t>(c0[k].hi) - split,
                                             static_cast<size_t>(last_head[k]));
          if (at != i) continue;
          for (size_t u = 0; u < U; ++u) {
            RecordedInst mv;
            mv.id = Inst::kIdVmovaps;
            mv.ops[0] = regs(0, u)[k].op;
            mv.ops[1] = regs(2, u)[k].op;
            mv.ops[0].as<BaseReg>().setId(Operand::indexToVirtId(regs(0, u)[k].reg));
            mv.ops[1].as<BaseReg>().setId(Operand::indexToVirtId(regs(2, u)[k].reg));
            out.push_back(mv);
          }
        }
      }
      pos = next[U - 1].second;
    } else if (pos == drain[0].first) {
      for (size_t i = 0; i < tl; ++i)
        for (size_t u = 0; u < U; ++u) {
          with_slots(regs(3, u), true);
          out.push_back(tail_inst(drain[u], regs(0, u), split + i));
          with_slots(regs(3, u), false);
        }
      pos = drain[U - 1].second;
    } else {
      out.push_back(main_[pos++]);
    }
  }
  main_.swap(out);
  pipelined_ = true;  // 2 U values cross the loop: registers will run short (finish())
  return true;
}

bool interleave(RecordingAssembler& as, const std::vector<RecordingAssembler::Range>& copies) {
  return as.interleave(copies);
}

}  // namespace kiln::jit
