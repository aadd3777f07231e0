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

// Makes sure an idle workspace can record a function of `instructions` instructions without
// growing (and faulting in) its buffers: takes one from the pool (or makes one), reserves and
// touches its recording buffers (RecordingAssembler::reserve), hands it back. The warm-up calls
// it off the program's critical path: a workspace's buffers otherwise grow, a page fault per 4
// KiB, the first time a large kernel is rendered (kiln-perf's 1000-add kernel: 153 faults,
// ~400 µs, docs/jit.md "Compile time").
void reserve_idle_render_workspace(size_t instructions);

}  // namespace kiln::jit
