#include "jit/cpu/recording_assembler.h"

#include <algorithm>
#include <cstring>

namespace kiln::jit {

using namespace asmjit;
namespace Inst = x86::Inst;

void RecordingAssembler::begin(JitIsa isa) {
  isa_ = isa;
  replaying_ = false;
  main_.clear();
  hoisted_.clear();
  seg_ = 0;
  anchor_ = UINT32_MAX;
  pipelined_ = false;
  regs_.clear();
  pool_.clear();
  frame_bytes_ = 0;
  save_area_ = -1;
  pool_label_ = newLabel();
}

namespace {
// At least `n` elements of capacity, every page of them written (one allocation of that size).
template <class V>
void reserve_touched(V& v, size_t n) {
  if (v.capacity() >= n) return;
  v.clear();
  v.resize(n);
  v.clear();
}
}  // namespace

void RecordingAssembler::reserve(size_t instructions) {
  reserve_touched(main_, instructions);
  reserve_touched(code_, instructions);
  reserve_touched(scratch_, instructions);
  reserve_touched(regs_, instructions);  // about one register per instruction
}

uint32_t RecordingAssembler::vreg(uint8_t group) {
  VirtReg r;
  r.group = group;
  regs_.push_back(r);
  return Operand::indexToVirtId(static_cast<uint32_t>(regs_.size() - 1));
}

x86::Gp RecordingAssembler::arg(int i) {
  static constexpr int8_t kSysV[] = {7, 6, 2, 1, 8, 9};  // rdi rsi rdx rcx r8 r9
  if (i < 0 || i >= 6) throw Unsupported("an argument on the stack");
  const x86::Gpq g(vreg(kGp));
  regs_.back().fixed = kSysV[i];
  return g;
}

x86::Mem RecordingAssembler::newStack(uint32_t size, uint32_t alignment) {
  alignment = std::clamp<uint32_t>(alignment, 1, 64);
  frame_bytes_ = (frame_bytes_ + alignment - 1) / alignment * alignment;
  const int32_t off = static_cast<int32_t>(frame_bytes_);
  frame_bytes_ += size;
  return x86::ptr(x86::rsp, off);
}

namespace {
// call_block's save area: 32 vector registers of 64 bytes, then 8 mask and 16 general ones of 8.
constexpr int32_t kSaveVec = 0, kSaveMask = 32 * 64, kSaveGp = kSaveMask + 8 * 8;
constexpr uint32_t kSaveBytes = kSaveGp + 16 * 8;
}  // namespace

void RecordingAssembler::call_block(void* fn, const x86::Mem& block) {
  if (save_area_ < 0) save_area_ = newStack(kSaveBytes, 64).offset();
  RecordedInst& in = (seg_ ? hoisted_ : main_).emplace_back();
  in.id = RecordedInst::kCall;
  in.ops[0] = imm(fn);
  in.ops[1] = block;
  in.ops[2] = x86::ptr(x86::rsp, save_area_);
}

x86::Mem RecordingAssembler::newConst(ConstPoolScope, const void* data, size_t size) {
  size_t align = 1;
  while (align < size && align < 64) align *= 2;
  const size_t off = (pool_.size() + align - 1) / align * align;
  pool_.resize(off + size);
  std::memcpy(pool_.data() + off, data, size);
  return x86::ptr(pool_label_, static_cast<int32_t>(off));
}

RecordingAssembler::Cursor RecordingAssembler::cursor() const {
  return seg_ ? Cursor{1, static_cast<uint32_t>(hoisted_.size())}
              : Cursor{0, static_cast<uint32_t>(main_.size())};
}

RecordingAssembler::Cursor RecordingAssembler::setCursor(Cursor c) {
  const Cursor prev = cursor();
  if (c.seg == 1) {
    if (c.pos != hoisted_.size()) throw Unsupported("an insertion inside the hoisted code");
    seg_ = 1;
  } else if (c.pos == main_.size()) {
    seg_ = 0;
  } else {  // a point inside the main stream: the one place hoisted code goes
    if (anchor_ != UINT32_MAX && anchor_ != c.pos) throw Unsupported("two insertion points");
    anchor_ = c.pos;
    if (!hoisted_.empty()) throw Unsupported("an insertion inside the hoisted code");
    seg_ = 1;
  }
  return prev;
}

void RecordingAssembler::end_function() {
  RecordedInst in;
  in.id = RecordedInst::kEndFunction;
  (seg_ ? hoisted_ : main_).push_back(in);
}

asmjit::Error RecordingAssembler::_emit(InstId id, const Operand_& o0, const Operand_& o1,
                                        const Operand_& o2, const Operand_* ext) {
  if (replaying_) return x86::Assembler::_emit(id, o0, o1, o2, ext);
  RecordedInst& in = (seg_ ? hoisted_ : main_).emplace_back();  // built in place: no copy
  in.id = id;
  in.options = instOptions();
  in.extra = extraReg();
  in.ops[0] = o0;
  in.ops[1] = o1;
  in.ops[2] = o2;
  if (ext != nullptr) {
    if (!ext[1].isNone() || !ext[2].isNone()) throw Unsupported("an instruction of 5 operands");
    in.ops[3] = ext[0];
  }
  resetInstOptions();
  resetExtraReg();
  resetInlineComment();
  if (seg_ == 1 && (id == Inst::kIdVmovups || id == Inst::kIdMovups) && o0.isReg() &&
      Operand::isVirtId(o0.id()) && o1.isMem() && o1.as<x86::Mem>().hasBaseLabel() &&
      o1.as<x86::Mem>().baseId() == pool_label_.id()) {
    VirtReg& r = regs_[Operand::virtIdToIndex(o0.id())];
    r.constant = true;  // a hoisted constant: may be demoted to its pool address
    r.pool = o1.as<x86::Mem>();
  }
  return kErrorOk;
}

asmjit::Error RecordingAssembler::bind(const Label& label) {
  if (replaying_) return x86::Assembler::bind(label);
  RecordedInst in;
  in.id = RecordedInst::kBindLabel;
  in.ops[0] = label;
  (seg_ ? hoisted_ : main_).push_back(in);
  return kErrorOk;
}

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
  return split != 0 && best * copies.size() <= 16 ? split : 0;
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
  // A crossing value's last reference in the head (slot_ maps the copy's registers meanwhile).
  std::vector<int32_t>& last_head = last_head_;
  last_head.assign(nown, -1);
  for (size_t k = 0; k < nown; ++k) slot_[c0[k].reg] = static_cast<int32_t>(k);
  for (size_t i = 0; i < split; ++i)
    visit_vregs(main_[head[0].first + i], [&](uint32_t v, const Operand_*) {
      if (slot_[v] >= 0) last_head[static_cast<size_t>(slot_[v])] = static_cast<int32_t>(i);
    });
  for (size_t k = 0; k < nown; ++k) slot_[c0[k].reg] = -1;

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

namespace {

// Whether `id` is commutative in its two sources, bit for bit, when the first is the constant
// whose lanes are at `lanes` (`bytes` of them): bitwise and integer operations always; float
// addition and multiplication when no lane of the constant is a NaN (with one NaN operand x86
// returns that NaN whatever the order; only two NaNs make the order matter).
bool commutes_with_constant(InstId id, const uint8_t* lanes, size_t bytes) {
  auto no_nan = [&](size_t width) {
    for (size_t at = 0; at + width <= bytes; at += width) {
      if (width == 4) {
        float f;
        std::memcpy(&f, lanes + at, 4);
        if (f != f) return false;
      } else {
        double d;
        std::memcpy(&d, lanes + at, 8);
        if (d != d) return false;
      }
    }
    return true;
  };
  switch (id) {
    case Inst::kIdVpandd:
    case Inst::kIdVpord:
    case Inst::kIdVpxord:
    case Inst::kIdVandps:
    case Inst::kIdVorps:
    case Inst::kIdVxorps:
    case Inst::kIdVpaddd:
    case Inst::kIdVpaddq:
    case Inst::kIdVpmulld:
    case Inst::kIdVpmullq:
      return true;
    case Inst::kIdVaddps:
    case Inst::kIdVmulps:
      return no_nan(4);
    case Inst::kIdVaddpd:
    case Inst::kIdVmulpd:
      return no_nan(8);
    default:
      return false;
  }
}

}  // namespace

// A hoisted constant as the first source of a commutative instruction (vecmath's Horner steps
// start `c * x`) moves to the second, the r/m slot: should the constant be demoted to its pool
// address (reg_alloc.h), it is then read from memory in place instead of reloaded into a
// register first. Same bits (commutes_with_constant).
void RecordingAssembler::commute_constants(std::vector<RecordedInst>& code) const {
  for (RecordedInst& in : code) {
    if (in.id >= RecordedInst::kBindLabel || in.extra.isReg() || !in.ops[0].isReg() ||
        !in.ops[1].isReg() || !in.ops[2].isReg() || !in.ops[3].isNone())
      continue;
    const uint32_t a = in.ops[1].id(), b = in.ops[2].id();
    if (!Operand::isVirtId(a) || !Operand::isVirtId(b)) continue;
    const VirtReg& ra = regs_[Operand::virtIdToIndex(a)];
    const VirtReg& rb = regs_[Operand::virtIdToIndex(b)];
    if (!ra.constant || rb.constant || ra.group != kVec || !ra.pool.hasBaseLabel()) continue;
    const size_t off = static_cast<size_t>(ra.pool.offset());
    const size_t bytes = in.ops[1].as<BaseReg>().size();
    if (off + bytes > pool_.size() || !commutes_with_constant(in.id, pool_.data() + off, bytes))
      continue;
    std::swap(in.ops[1], in.ops[2]);
  }
}

void RecordingAssembler::finish() {
  std::vector<RecordedInst>& code = code_;
  code.clear();
  code.reserve(main_.size() + hoisted_.size());
  const size_t at = anchor_ == UINT32_MAX ? main_.size() : anchor_;
  code.insert(code.end(), main_.begin(), main_.begin() + static_cast<std::ptrdiff_t>(at));
  code.insert(code.end(), hoisted_.begin(), hoisted_.end());
  code.insert(code.end(), main_.begin() + static_cast<std::ptrdiff_t>(at), main_.end());
  if (isa_ != JitIsa::Sse2) commute_constants(code);
  RegAssignment& ra = assignment_;
  if (!assign_registers(code, regs_, isa_, pool_label_.id(), frame_bytes_, ra, scratch_, reg_alloc_,
                        pipelined_))
    throw Unsupported(ra.short_of == 0   ? "more general registers than the machine has"
                      : ra.short_of == 2 ? "more mask registers than the machine has"
                                         : "more vector registers than spilling frees");
  live_across_calls(code, regs_, ra, isa_, pool_label_.id(), reg_alloc_, live_across_);
  encode(code, ra);
}

void RecordingAssembler::encode_call(const RecordedInst& in, const LiveAcross& live) {
  const x86::Mem save = in.ops[2].as<x86::Mem>();
  auto slot = [&](int32_t offset, uint32_t size) {
    x86::Mem m = save.cloneAdjusted(offset);
    m.setSize(size);
    return m;
  };
  // Every vector register whole (a value may live in its low half only: the save is the same).
  const uint32_t vbytes = isa_ == JitIsa::Avx512 ? 64 : isa_ == JitIsa::Avx2 ? 32 : 16;
  auto vec = [&](uint32_t i) -> x86::Vec {
    return vbytes == 64   ? x86::Vec(x86::zmm(i))
           : vbytes == 32 ? x86::Vec(x86::ymm(i))
                          : x86::xmm(i);
  };
  const InstId vmove = isa_ == JitIsa::Sse2 ? Inst::kIdMovups : Inst::kIdVmovups;
  auto each = [](uint32_t bits, auto&& f) {
    for (; bits; bits &= bits - 1) f(static_cast<uint32_t>(__builtin_ctz(bits)));
  };
  each(live.vec,
       [&](uint32_t i) { emit(vmove, slot(kSaveVec + 64 * int32_t(i), vbytes), vec(i)); });
  each(live.mask, [&](uint32_t i) { kmovw(slot(kSaveMask + 8 * int32_t(i), 2), x86::k(i)); });
  each(live.gp, [&](uint32_t i) { mov(slot(kSaveGp + 8 * int32_t(i), 8), x86::gpq(i)); });
  lea(x86::rdi, in.ops[1].as<x86::Mem>());
  mov(x86::rax, in.ops[0].as<Imm>());
  call(x86::rax);
  each(live.vec,
       [&](uint32_t i) { emit(vmove, vec(i), slot(kSaveVec + 64 * int32_t(i), vbytes)); });
  each(live.mask, [&](uint32_t i) { kmovw(x86::k(i), slot(kSaveMask + 8 * int32_t(i), 2)); });
  each(live.gp, [&](uint32_t i) { mov(x86::gpq(i), slot(kSaveGp + 8 * int32_t(i), 8)); });
}

void RecordingAssembler::encode(const std::vector<RecordedInst>& code, const RegAssignment& ra) {
  replaying_ = true;
  const bool frame = frame_bytes_ > 0;
  std::vector<x86::Gp> saved;  // the callee-saved registers assigned
  for (int r : {3, 5, 12, 13, 14, 15})
    if (ra.gp_used & (1u << r)) saved.push_back(x86::Gpq(static_cast<uint32_t>(r)));
  for (const x86::Gp& r : saved) push(r);
  if (frame) {
    push(x86::rbp);
    mov(x86::rbp, x86::rsp);
    and_(x86::rsp, -64);
    sub(x86::rsp, static_cast<int32_t>((frame_bytes_ + 63) / 64 * 64));
  }
  auto phys = [&](uint32_t id) {
    return Operand::isVirtId(id) ? static_cast<uint32_t>(ra.phys[Operand::virtIdToIndex(id)]) : id;
  };
  size_t call_index = 0;
  for (const RecordedInst& rec : code) {
    if (rec.id == RecordedInst::kBindLabel) {
      bind(rec.ops[0].as<Label>());
      continue;
    }
    if (rec.id == RecordedInst::kCall) {
      encode_call(rec, live_across_.at(call_index++));
      continue;
    }
    if (rec.id == RecordedInst::kEndFunction) {
      if (frame) {
        mov(x86::rsp, x86::rbp);
        pop(x86::rbp);
      }
      for (size_t i = saved.size(); i-- > 0;) pop(saved[i]);
      if (isa_ != JitIsa::Sse2) vzeroupper();
      ret();
      continue;
    }
    RecordedInst in = rec;
    for (Operand_& op : in.ops) {
      if (op.isReg()) {
        op.as<BaseReg>().setId(phys(op.id()));
      } else if (op.isMem()) {
        BaseMem& m = op.as<BaseMem>();
        if (m.hasBaseReg()) m.setBaseId(phys(m.baseId()));
        if (m.hasIndexReg()) m.setIndexId(phys(m.indexId()));
      }
    }
    const bool shift = in.id == Inst::kIdShl || in.id == Inst::kIdShr || in.id == Inst::kIdSar ||
                       in.id == Inst::kIdRol || in.id == Inst::kIdRor;
    if (shift && in.ops[1].isReg() && in.ops[1].id() != x86::Gp::kIdCx) {
      // A shift by a register counts by cl: swap the count into rcx around it (xchg moves no
      // flags; the shift's own flags survive the second swap).
      const uint32_t c = in.ops[1].id();
      if (!in.ops[0].isReg() || in.ops[0].id() == c)
        throw Unsupported("a shift by a register of this form");
      Operand_ value = in.ops[0];
      if (value.id() == x86::Gp::kIdCx) value.as<BaseReg>().setId(c);  // rcx's value is in c
      xchg(x86::rcx, x86::Gpq(c));
      const Operand_ ext[3] = {in.ops[3], Operand_(), Operand_()};
      x86::Assembler::_emit(in.id, value, x86::cl, Operand_(), ext);
      xchg(x86::rcx, x86::Gpq(c));
      continue;
    }
    setInstOptions(in.options);
    if (in.extra.isReg()) {
      RegOnly extra = in.extra;
      extra.setId(phys(extra.id()));
      setExtraReg(extra);
    }
    const Operand_ ext[3] = {in.ops[3], Operand_(), Operand_()};
    x86::Assembler::_emit(in.id, in.ops[0], in.ops[1], in.ops[2], ext);
  }
  if (!pool_.empty()) align(AlignMode::kData, 64);
  x86::Assembler::bind(pool_label_);
  if (!pool_.empty()) embed(pool_.data(), pool_.size());
  replaying_ = false;
}

}  // namespace kiln::jit
