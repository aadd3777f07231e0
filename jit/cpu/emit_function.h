// What a kernel function's renderer does differently on the two emitters (body_emitter.h): the
// function's entry (the Compiler makes a function node whose arguments its register allocator
// places; the recorder takes them in the SysV registers, recording_assembler.h) and end, and the
// code range one unrolled copy of a body took (for interleave()). Every CPU kernel function has
// the signature of render.h's KernelFn.
#pragma once
#include <asmjit/x86.h>

#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/interleave.h"
#include "jit/cpu/kernel_compiler.h"
#include "jit/cpu/recording_assembler.h"

namespace kiln::jit {

// The function's entry and end, per emitter: the Compiler makes a function node whose arguments
// its allocator places; the recorder takes them in the SysV registers.
struct FunctionArgs {
  asmjit::x86::Gp ptrs, inner, outer, n_inner, n_outer, params;
};
inline FunctionArgs begin_function(KernelCompiler& cc, JitIsa isa) {
  asmjit::FuncNode* f =
      cc.addFunc(asmjit::FuncSignatureT<void, char* const*, const int64_t*, const int64_t*, int64_t,
                                        int64_t, const void*>(asmjit::CallConvId::kHost));
  if (isa != JitIsa::Sse2) {
    f->frame().setAvxEnabled();
    f->frame().setAvxCleanup();
  }
  if (isa == JitIsa::Avx512) f->frame().setAvx512Enabled();
  FunctionArgs a{cc.newIntPtr("ptrs"),   cc.newIntPtr("inner"),  cc.newIntPtr("outer"),
                 cc.newInt64("n_inner"), cc.newInt64("n_outer"), cc.newIntPtr("params")};
  f->setArg(0, a.ptrs);
  f->setArg(1, a.inner);
  f->setArg(2, a.outer);
  f->setArg(3, a.n_inner);
  f->setArg(4, a.n_outer);
  f->setArg(5, a.params);
  return a;
}
inline FunctionArgs begin_function(RecordingAssembler& as, JitIsa) {
  return {as.arg(0), as.arg(1), as.arg(2), as.arg(3), as.arg(4), as.arg(5)};
}
inline void end_function(KernelCompiler& cc) { cc.endFunc(); }
inline void end_function(RecordingAssembler& as) { as.end_function(); }

// The code one unrolled copy of the body took, for interleave().
inline asmjit::BaseNode* body_mark(KernelCompiler& cc) { return cc.cursor(); }
inline NodeRange body_range(KernelCompiler& cc, asmjit::BaseNode* before) {
  return {cc.cursor() == before ? nullptr : before->next(), cc.cursor()};
}
inline size_t body_mark(RecordingAssembler& as) { return as.cursor().pos; }
inline RecordingAssembler::Range body_range(RecordingAssembler& as, size_t before) {
  return {before, as.cursor().pos};
}

}  // namespace kiln::jit
