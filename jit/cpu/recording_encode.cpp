// RecordingAssembler::finish(): constants commuted into r/m slots, registers assigned
// (reg_alloc.h), and the encoding of the recorded code on physical registers, call_block's calls
// with their saves of the registers live across them included.
#include <algorithm>
#include <cstring>

#include "jit/cpu/recording_assembler.h"

namespace kiln::jit {

using namespace asmjit;
namespace Inst = x86::Inst;

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

// The ordinary store of a non-temporal one (same operands, same encoding length), else `id`.
InstId ordinary_store(InstId id) {
  switch (id) {
    case Inst::kIdVmovntps:
      return Inst::kIdVmovups;
    case Inst::kIdVmovntpd:
      return Inst::kIdVmovupd;
    case Inst::kIdMovntps:
      return Inst::kIdMovups;
    case Inst::kIdMovntpd:
      return Inst::kIdMovupd;
    default:
      return id;
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
  labels_ = this->code()->labelCount();
  encode(code, ra);
}

void RecordingAssembler::encode_ordinary_twin() {
  while (code()->labelCount() < labels_) newLabel();
  if (code()->labelCount() != labels_ || pool_label_.id() >= labels_)
    throw Unsupported("a CodeHolder that is not a fresh one for the twin");
  addresses_.clear();
  ordinary_stores_ = true;
  encode(code_, assignment_);
  ordinary_stores_ = false;
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
  // Always the 10-byte form (REX.W B8, an 8-byte immediate), whatever the address: the disk
  // cache rewrites those 8 bytes with the loading process's address (call_targets.h).
  const size_t at = offset();
  movabs(x86::rax, in.ops[0].as<Imm>());
  if (offset() != at + 10 || bufferData()[at] != 0x48 || bufferData()[at + 1] != 0xB8)
    throw Unsupported("a call target's address in another form than movabs rax, imm64");
  addresses_.push_back(
      {static_cast<uint32_t>(at + 2), reinterpret_cast<const void*>(in.ops[0].as<Imm>().value())});
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
    if (ra.in_pool && loads_constant_left_in_pool(rec, ra)) continue;
    RecordedInst in = rec;
    if (ordinary_stores_) {
      if (in.id == Inst::kIdSfence) continue;
      in.id = ordinary_store(in.id);
    }
    if (ra.in_pool) read_constants_from_pool(in, regs_, ra);
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
    // A register copy that register assignment gave one register (a fused multiply-add's copy
    // of a value dying there, vec_emitter.h AsmVecOps::fma): nothing to move.
    const bool vec_move = in.id == Inst::kIdVmovaps || in.id == Inst::kIdVmovapd ||
                          in.id == Inst::kIdMovaps || in.id == Inst::kIdMovapd;
    if (vec_move && !in.extra.isReg() && in.ops[0].isReg() && in.ops[1].isReg() &&
        in.ops[0].id() == in.ops[1].id() && in.ops[0].size() == in.ops[1].size())
      continue;
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
