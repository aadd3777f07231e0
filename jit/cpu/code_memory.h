// The executable memory every CPU kernel lives in: one asmjit JitRuntime for the process, never
// destroyed (kernels live as long as the process; a background render may run at exit).
//
// Its first block of code memory (kFirstBlockBytes; asmjit's allocator makes later blocks as
// the kernels need) starts at a known address: the runtime's first 64 bytes are taken when it is
// made and kept, which also keeps the block from ever being freed. prefault_cpu_code_memory()
// then fills that block's page tables in one madvise(MADV_POPULATE_WRITE), where each kernel
// would otherwise take a page fault per 4 KiB it lands on (~10 µs each on the development VM,
// 0.7 µs a page populated; a render's or a disk load's copy into fresh pages, docs/jit.md
// "Compile time"). The warm-up (warm_up.h) calls it on the background thread.
#pragma once
#include <asmjit/x86.h>

#include <cstddef>

namespace kiln::jit {

inline constexpr size_t kFirstBlockBytes = size_t{1} << 20;

asmjit::JitRuntime& cpu_code_runtime();

// Populates the first block's pages (once per process; later calls do nothing): the bytes
// populated, 0 where the kernel refused (MADV_POPULATE_WRITE is Linux 5.14+) or the block was
// not found whole among the process's mappings.
size_t prefault_cpu_code_memory();

}  // namespace kiln::jit
