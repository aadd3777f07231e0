#include "jit/cpu/recording_assembler.h"

#include <algorithm>
#include <cstring>

namespace kiln::jit {

using namespace asmjit;
namespace Inst = x86::Inst;

void RecordingAssembler::begin(JitIsa isa) {
  isa_ = isa;
  replaying_ = false;
  ordinary_stores_ = false;
  main_.clear();
  hoisted_.clear();
  seg_ = 0;
  anchor_ = UINT32_MAX;
  pipelined_ = false;
  regs_.clear();
  pool_.clear();
  frame_bytes_ = 0;
  save_area_ = -1;
  addresses_.clear();
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
  reserve_touched(hoisted_, instructions / 8);
  // The register scan's working memory: per register or per position, as many as instructions.
  RegAllocScratch& w = reg_alloc_;
  reserve_touched(w.iv, instructions);
  reserve_touched(w.at_pos, instructions);
  reserve_touched(w.order, instructions);
  reserve_touched(w.dies_at, instructions);
  reserve_touched(w.next_dying, instructions);
  reserve_touched(w.homes, instructions);
  reserve_touched(w.spilled, instructions);
  reserve_touched(w.defined, instructions);
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

}  // namespace kiln::jit
