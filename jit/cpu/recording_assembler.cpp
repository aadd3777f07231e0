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
  regs_.clear();
  pool_.clear();
  frame_bytes_ = 0;
  pool_label_ = newLabel();
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

Error RecordingAssembler::_emit(InstId id, const Operand_& o0, const Operand_& o1,
                                const Operand_& o2, const Operand_* ext) {
  if (replaying_) return x86::Assembler::_emit(id, o0, o1, o2, ext);
  RecordedInst in;
  in.id = id;
  in.options = instOptions();
  in.extra = extraReg();
  in.ops[0] = o0;
  in.ops[1] = o1;
  in.ops[2] = o2;
  if (ext != nullptr)
    for (int j = 0; j < 3; ++j) in.ops[3 + j] = ext[j];
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
  (seg_ ? hoisted_ : main_).push_back(in);
  return kErrorOk;
}

Error RecordingAssembler::bind(const Label& label) {
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

bool interleave(RecordingAssembler& as, const std::vector<RecordingAssembler::Range>& copies) {
  return as.interleave(copies);
}

void RecordingAssembler::finish() {
  std::vector<RecordedInst>& code = code_;
  code.clear();
  code.reserve(main_.size() + hoisted_.size());
  const size_t at = anchor_ == UINT32_MAX ? main_.size() : anchor_;
  code.insert(code.end(), main_.begin(), main_.begin() + static_cast<std::ptrdiff_t>(at));
  code.insert(code.end(), hoisted_.begin(), hoisted_.end());
  code.insert(code.end(), main_.begin() + static_cast<std::ptrdiff_t>(at), main_.end());
  RegAssignment ra;
  if (!assign_registers(code, regs_, isa_, pool_label_.id(), frame_bytes_, ra, scratch_))
    throw Unsupported(ra.short_of == 0   ? "more general registers than the machine has"
                      : ra.short_of == 2 ? "more mask registers than the machine has"
                                         : "more vector registers than spilling frees");
  encode(code, ra);
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
  for (const RecordedInst& rec : code) {
    if (rec.id == RecordedInst::kBindLabel) {
      bind(rec.ops[0].as<Label>());
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
      x86::Assembler::_emit(in.id, value, x86::cl, Operand_(), &in.ops[3]);
      xchg(x86::rcx, x86::Gpq(c));
      continue;
    }
    setInstOptions(in.options);
    if (in.extra.isReg()) {
      RegOnly extra = in.extra;
      extra.setId(phys(extra.id()));
      setExtraReg(extra);
    }
    x86::Assembler::_emit(in.id, in.ops[0], in.ops[1], in.ops[2], &in.ops[3]);
  }
  if (!pool_.empty()) align(AlignMode::kData, 64);
  x86::Assembler::bind(pool_label_);
  if (!pool_.empty()) embed(pool_.data(), pool_.size());
  replaying_ = false;
}

}  // namespace kiln::jit
