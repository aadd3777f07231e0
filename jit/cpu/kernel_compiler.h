// The x86::Compiler the CPU target renders kernels with: asmjit's, with virtual registers that
// are cheaper to make. asmjit names every virtual register it makes; an unnamed one gets a
// generic name printed with snprintf ("%123"), a named one (`newInt64("o")`) goes through a
// printf-style format as well: together about 10% of a kernel's rendering time (perf, gelu's
// kernel: docs/jit.md "Compile time"). Here the register creators the kernels use take their
// name as a plain string, unformatted, and an unnamed register gets a constant name, except
// when a logger will print the function (KILN_DUMP=asm), where asmjit's names are kept.
// The generated code is the same either way: names exist only for listings.
#pragma once
#include <asmjit/x86.h>

namespace kiln::jit {

class KernelCompiler : public asmjit::x86::Compiler {
 public:
  // `readable_names`: asmjit's own naming (numbered registers), for listings. Without a
  // CodeHolder the compiler is detached (attach it with CodeHolder::attach).
  KernelCompiler(asmjit::CodeHolder* code, bool readable_names)
      : asmjit::x86::Compiler(code), readable_(readable_names) {}
  void set_readable_names(bool on) { readable_ = on; }

  asmjit::x86::Xmm newXmm(const char* name = nullptr) { return make<asmjit::x86::Xmm>(kXmm, name); }
  asmjit::x86::Ymm newYmm(const char* name = nullptr) { return make<asmjit::x86::Ymm>(kYmm, name); }
  asmjit::x86::Zmm newZmm(const char* name = nullptr) { return make<asmjit::x86::Zmm>(kZmm, name); }
  asmjit::x86::KReg newKw(const char* name = nullptr) { return make<asmjit::x86::KReg>(kKw, name); }
  asmjit::x86::Gp newGpd(const char* name = nullptr) { return make<asmjit::x86::Gp>(kGpd, name); }
  asmjit::x86::Gp newGpq(const char* name = nullptr) { return make<asmjit::x86::Gp>(kGpq, name); }
  asmjit::x86::Gp newInt64(const char* name = nullptr) {
    return make<asmjit::x86::Gp>(kInt64, name);
  }
  asmjit::x86::Gp newIntPtr(const char* name = nullptr) {
    return make<asmjit::x86::Gp>(kIntPtr, name);
  }

  // Calls fn(&block) (a function of one pointer, the host's convention): asmjit's invoke saves
  // what lives across it. RecordingAssembler has the same method (vec_emitter.h calls either).
  void call_block(void* fn, const asmjit::x86::Mem& block) {
    asmjit::x86::Gp p = newIntPtr();
    lea(p, block);
    asmjit::InvokeNode* call = nullptr;
    invoke(&call, asmjit::imm(fn), asmjit::FuncSignatureT<void, void*>(asmjit::CallConvId::kHost));
    call->setArg(0, p);
  }

 private:
  static constexpr asmjit::TypeId kXmm = asmjit::TypeId::kInt32x4, kYmm = asmjit::TypeId::kInt32x8,
                                  kZmm = asmjit::TypeId::kInt32x16, kKw = asmjit::TypeId::kMask16,
                                  kGpd = asmjit::TypeId::kUInt32, kGpq = asmjit::TypeId::kUInt64,
                                  kInt64 = asmjit::TypeId::kInt64,
                                  kIntPtr = asmjit::TypeId::kIntPtr;

  template <class Reg>
  Reg make(asmjit::TypeId type, const char* name) {
    Reg reg(asmjit::Globals::NoInit);
    _newReg(&reg, type, name != nullptr ? name : readable_ ? nullptr : "v");
    return reg;
  }

  bool readable_;
};

}  // namespace kiln::jit
