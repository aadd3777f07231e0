// The asmjit objects one render works in: a CodeHolder and a KernelCompiler (or the fast path's
// RecordingAssembler, whose recording buffers are kept too), taken from a pool
// for the render and handed back after it, soft-reset. asmjit's zones keep their blocks across a
// soft reset, so a render does not allocate, fault in and free its working memory anew: in
// kiln-perf, where the workloads' frees leave glibc's heap trimmed, a fresh pair per kernel took
// about 40 minor page faults (docs/jit.md "Compile time"). A workspace keeps the memory of the
// largest kernel it rendered; the pool keeps a few (renders run on several threads at once) and
// is never destroyed, like the JitRuntime (kernels may be rendered while the process exits).
// A render that throws (asmjit reported an error) drops its workspace instead of handing it back.
#pragma once
#include <asmjit/x86.h>

#include <memory>

#include "jit/cpu/kernel_compiler.h"
#include "jit/cpu/recording_assembler.h"

namespace kiln::jit {

class RenderWorkspace {
 public:
  RenderWorkspace();  // an idle workspace, or a new one; the render initializes its CodeHolder
  ~RenderWorkspace();
  RenderWorkspace(const RenderWorkspace&) = delete;
  RenderWorkspace& operator=(const RenderWorkspace&) = delete;

  asmjit::CodeHolder& code() { return parts_->code; }
  KernelCompiler& compiler() { return parts_->cc; }
  RecordingAssembler& assembler() { return parts_->as; }  // the fast path's (render.h)

  struct Parts {
    asmjit::CodeHolder code;
    KernelCompiler cc{nullptr, false};
    RecordingAssembler as;
  };

 private:
  std::unique_ptr<Parts> parts_;
  int exceptions_;  // std::uncaught_exceptions() when the render began
};

}  // namespace kiln::jit
