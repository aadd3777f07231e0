// The CPU target's fast emitter: an x86::Assembler that records a kernel's instructions on
// virtual registers, assigns physical registers itself (reg_alloc.h) and only then encodes.
// Recording here (recording_assembler.cpp); weaving and software pipelining of unrolled copies
// (recording_pipeline.cpp); finish(): register assignment and encoding (recording_encode.cpp).
//
// Why: asmjit's x86::Compiler spends ~70% of a kernel's render in its register allocator
// (docs/jit.md "Compile time"), general machinery for control flow, calls and spills that a
// pointwise kernel does not need: its bodies are straight-line code inside a few loops. This
// emitter offers the subset of KernelCompiler's interface the kernel emitters use (the register
// makers, newConst, newStack, a cursor for hoisting constants, every x86 instruction method
// through x86::Assembler's), so the SAME emission code (vec_emitter.h, body_emitter.h) drives
// both: it is a template over the emitter.
//
// Contract:
//   - Instructions and label binds are recorded in emission order (x86::Assembler's instruction
//     methods all end in the virtual _emit, overridden here). Registers made by new*() are
//     virtual; arg(i) is the i-th integer argument of the SysV convention, held from the entry.
//   - The emission must be SSA-like in program order: a register's first reference writes it,
//     except across loops (a backward jump), where values live into the loop are kept to its
//     end. The kernel emitters follow this (every value is a new register).
//   - newConst() places data in a pool after the code (RIP-relative); constants hoisted through
//     setCursor(hoist point) are loaded once before the loops and may be demoted to memory
//     operands or reloads when registers run short (reg_alloc.h).
//   - newStack() gives 64-byte-aligned slots of a frame below an aligned rsp (rbp keeps the
//     caller's rsp); calls are not supported (invoke throws Unsupported).
//   - finish() allocates registers and encodes into the CodeHolder (prologue saving the
//     callee-saved registers used, the recorded code, epilogue at each end_function(), the
//     constant pool). It throws Unsupported when registers run out; any asmjit error goes to
//     the CodeHolder's error handler. Either way the caller discards the CodeHolder's contents
//     and renders the kernel with the Compiler instead (render.cpp): nothing half-made escapes.
#pragma once
#include <asmjit/x86.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "jit/cpu/call_targets.h"
#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/reg_alloc.h"

namespace kiln::jit {

class RecordingAssembler : public asmjit::x86::Assembler {
 public:
  // What the fast path does not do: the caller renders with the Compiler.
  struct Unsupported : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  // An insertion point: the end of the main stream, or of the hoisted constants' stream.
  struct Cursor {
    uint8_t seg = 0;
    uint32_t pos = 0;
  };
  using Range = std::pair<size_t, size_t>;  // [first, last) of the main stream

  RecordingAssembler() = default;
  // Clears what a previous render recorded (keeps the vectors' memory); call after attaching.
  void begin(JitIsa isa);

  // Gives the recording buffers room for a function of `instructions` instructions and
  // touches it, so that rendering one that size faults no page in: an idle workspace's, by the
  // warm-up (render_workspace.h). Never during a render (it clears what is recorded).
  void reserve(size_t instructions);
  size_t capacity() const {
    return std::min({main_.capacity(), code_.capacity(), scratch_.capacity()});
  }

  // ---- registers (names are ignored: listings show physical registers) ----
  asmjit::x86::Xmm newXmm(const char* = nullptr) { return asmjit::x86::Xmm(vreg(kVec)); }
  asmjit::x86::Ymm newYmm(const char* = nullptr) { return asmjit::x86::Ymm(vreg(kVec)); }
  asmjit::x86::Zmm newZmm(const char* = nullptr) { return asmjit::x86::Zmm(vreg(kVec)); }
  asmjit::x86::KReg newKw(const char* = nullptr) { return asmjit::x86::KReg(vreg(kMask)); }
  asmjit::x86::Gp newGpd(const char* = nullptr) { return asmjit::x86::Gpd(vreg(kGp)); }
  asmjit::x86::Gp newGpq(const char* = nullptr) { return asmjit::x86::Gpq(vreg(kGp)); }
  asmjit::x86::Gp newInt64(const char* = nullptr) { return asmjit::x86::Gpq(vreg(kGp)); }
  asmjit::x86::Gp newIntPtr(const char* = nullptr) { return asmjit::x86::Gpq(vreg(kGp)); }
  asmjit::x86::Gp arg(int i);

  asmjit::x86::Mem newStack(uint32_t size, uint32_t alignment);
  asmjit::x86::Mem newConst(asmjit::ConstPoolScope, const void* data, size_t size);
  // Calls fn(&block) (vec_emitter.h: sin/cos's exact reduction), recorded as one pseudo-
  // instruction: encoded as stores of every register holding a value live across it (the SysV
  // convention preserves no vector or mask register, and rax rcx rdx rsi rdi r8-r11) into a
  // save area of the frame, `lea rdi, block`, the call through rax, and the reloads. Other
  // calls (asmjit's invoke) are not supported.
  void call_block(void* fn, const asmjit::x86::Mem& block);
  // Where the function's code holds its callees' addresses (call_block), after finish().
  const std::vector<CodeAddress>& code_addresses() const { return addresses_; }
  asmjit::Error invoke(asmjit::InvokeNode**, const asmjit::Operand_&,
                       const asmjit::FuncSignature&) {
    throw Unsupported("a call");
  }

  Cursor cursor() const;
  Cursor setCursor(Cursor c);  // returns the previous cursor
  void end_function();         // the epilogue and ret (emitted by finish())

  // Weaves consecutive ranges of straight-line instructions, as interleave.h does for the
  // Compiler's nodes (same order: copy 0's first, copy 1's first, ...). False, and the ranges
  // left as recorded, if one holds a label or a jump.
  bool interleave(const std::vector<Range>& copies);

  // Software pipelining of an unrolled loop (render.cpp; docs/jit.md "Kernels"). The four
  // groups hold U copies of one body each, recorded in this order with only plain instructions
  // between the groups: `head` (the prologue, before the loop), `tail` and `next` (the loop body:
  // the copies for this iteration's vectors, then those for the next iteration's) and `drain`
  // (after the loop). Each body is split after its first `split` instructions
  // (pipeline_split); the prologue keeps the heads of its copies, the loop keeps the tails of
  // `tail` woven with the heads of `next`, the drain keeps the tails of `drain`. A tail reads
  // the values its head made from the prologue copy's registers, and the loop moves the next
  // heads' values into those registers once the tails have read them (vmovaps: loop-carried).
  // Each vector is still computed by the same instructions in the same order. False, with
  // nothing changed, when the copies are not identical straight-line code.
  bool pipeline(const std::vector<Range>& head, const std::vector<Range>& tail,
                const std::vector<Range>& next, const std::vector<Range>& drain, size_t split);
  // Where to split the body recorded as `copies` (U identical copies, consecutive, ending at
  // the end of the main stream), 0 for nowhere: after s instructions, s in [L/8, L/3] of the
  // body's L, crossed by the fewest values (ties: the nearest to L/5), all of them vectors and
  // at most 16 over the U copies (they stay in registers across the loop's back edge), and
  // the woven loop's vector values, U times woven_peak(), at most kPipelineVectorBudget.
  size_t pipeline_split(const std::vector<Range>& copies);
  // Past this estimate of the pipelined loop's live vector values the allocator spills values
  // (not only constants) to the stack inside the loop, and the plain woven loop is faster. The
  // estimate counts a value live at its last reference, where the allocator already hands its
  // register to the destination: hence above AVX-512's 32. Measured on the Zen 4 VM
  // (2026-12-01, 3 copies unless said): erf-form gelu 3 x 13 = 39, stack spills, 1.50 ms for
  // 2^22 floats pipelined against 1.11 plain; gelu(2x + 1) forward and backward 39, 2.19 against
  // 1.74; tanh-form gelu 27, 0.75 against 0.86, and at 4 copies 36, no spill, 0.745 against
  // 0.79; log1p(exp(x)) 33, no spill, 1.46 against 1.68.
  static constexpr size_t kPipelineVectorBudget = 36;

  // Allocates registers and encodes everything (see the contract above).
  void finish();
  // After finish(), the CodeHolder reset, initialized and this emitter attached again (render.cpp):
  // encodes the same recording once more with every non-temporal store (movntps, movntpd and
  // their VEX forms) an ordinary unaligned one (movups, movupd) and every sfence left out. The
  // kernel emitters make a streaming variant differ from the ordinary one in exactly those
  // instructions (KernelVariant::streaming), so this is the ordinary variant's code, byte for
  // byte, for the cost of an encoding instead of a render (tests/test_jit_store_twin.cpp compares
  // the bytes). Labels are made again in the order finish() had them.
  void encode_ordinary_twin();

  asmjit::Error _emit(asmjit::InstId id, const asmjit::Operand_& o0, const asmjit::Operand_& o1,
                      const asmjit::Operand_& o2, const asmjit::Operand_* ext) override;
  asmjit::Error bind(const asmjit::Label& label) override;

 private:
  static constexpr uint8_t kGp = 0, kVec = 1, kMask = 2;
  // call_block's save area: 32 vector registers of 64 bytes, then 8 mask and 16 general ones of
  // 8 (recording_encode.cpp).
  static constexpr int32_t kSaveVec = 0, kSaveMask = 32 * 64, kSaveGp = kSaveMask + 8 * 8;
  static constexpr uint32_t kSaveBytes = kSaveGp + 16 * 8;
  uint32_t vreg(uint8_t group);
  void encode(const std::vector<RecordedInst>& code, const RegAssignment& regs);
  bool ordinary_stores_ = false;  // encode(): non-temporal stores as ordinary ones, no sfence
  uint32_t labels_ = 0;           // the CodeHolder's labels when finish() encoded
  void encode_call(const RecordedInst& call, const LiveAcross& live);
  // A register a copy of the unrolled body makes (pipeline_split, pipeline).
  struct CopyReg {
    uint32_t reg;
    int32_t lo, hi;  // its first and last reference in the copy
    asmjit::Operand_ op;
  };
  size_t own_registers(const Range& r);
  void last_head_references(const Range& copy, const CopyReg* c, size_t n, size_t split);
  size_t woven_peak(const Range& copy, size_t split);
  void commute_constants(std::vector<RecordedInst>& code) const;

  JitIsa isa_ = JitIsa::Sse2;
  bool replaying_ = false;
  std::vector<RecordedInst> main_, hoisted_;
  uint8_t seg_ = 0;
  uint32_t anchor_ = UINT32_MAX;  // where the hoisted stream goes in the main one
  bool pipelined_ = false;        // pipeline() ran: constants read in place are demoted first
  std::vector<VirtReg> regs_;
  asmjit::Label pool_label_;
  std::vector<uint8_t> pool_;
  uint32_t frame_bytes_ = 0;
  int32_t save_area_ = -1;               // call_block's save area in the frame (-1: no call yet)
  std::vector<CodeAddress> addresses_;   // each call's target address in the encoded code
  std::vector<LiveAcross> live_across_;  // per recorded call, in order (finish())
  // The whole function and a buffer for its rewrites and weaving, kept across renders (the
  // workspace is pooled, render_workspace.h): no allocation and no page faults per render.
  std::vector<RecordedInst> code_, scratch_;
  // pipeline_split's and pipeline()'s bookkeeping, kept for the same reason: each virtual
  // register's first reference, a slot per register, the copies' registers, the crossing values.
  std::vector<uint32_t> first_;
  std::vector<int32_t> slot_, last_head_;
  std::vector<CopyReg> copy_regs_;
  std::vector<size_t> crossing_;
  RegAllocScratch reg_alloc_;  // the register scan's (reg_alloc.h)
  RegAssignment assignment_;
};

bool interleave(RecordingAssembler& as, const std::vector<RecordingAssembler::Range>& copies);

}  // namespace kiln::jit
