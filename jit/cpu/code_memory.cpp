#include "jit/cpu/code_memory.h"

#include <sys/mman.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "runtime/logging.h"

namespace kiln::jit {

namespace {

struct CodeMemory {
  asmjit::JitRuntime* rt = nullptr;
  void* first = nullptr;  // the first block's start (the kept 64 bytes), or null
};

CodeMemory& code_memory() {
  static CodeMemory* m = [] {
    auto* c = new CodeMemory();
    asmjit::JitAllocator::CreateParams params;
    params.blockSize = static_cast<uint32_t>(kFirstBlockBytes);
    c->rt = new asmjit::JitRuntime(&params);
    void* rw = nullptr;
    if (c->rt->allocator()->alloc(&c->first, &rw, 64) != asmjit::kErrorOk) c->first = nullptr;
    return c;
  }();
  return *m;
}

// The end of the mapping of this process that holds `p` (0 when none is found).
uintptr_t mapping_end(uintptr_t p) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return 0;
  uintptr_t found = 0;
  char line[512];
  while (found == 0 && std::fgets(line, sizeof(line), maps) != nullptr) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &begin, &end) == 2 && p >= begin && p < end)
      found = end;
  }
  std::fclose(maps);
  return found;
}

}  // namespace

asmjit::JitRuntime& cpu_code_runtime() { return *code_memory().rt; }

size_t prefault_cpu_code_memory() {
  static std::once_flag once;
  static size_t populated = 0;
  std::call_once(once, [] {
    const uintptr_t first = reinterpret_cast<uintptr_t>(code_memory().first);
    // Only the block asmjit made for it: the first allocation starts its block, and the block
    // must lie whole within one mapping (else something else is there: leave it be).
    if (first == 0 || first % 4096 != 0 || mapping_end(first) < first + kFirstBlockBytes) return;
    if (::madvise(reinterpret_cast<void*>(first), kFirstBlockBytes, MADV_POPULATE_WRITE) == 0)
      populated = kFirstBlockBytes;
    KILN_DEBUG(Jit, "cpu code memory: {} KiB of the first block populated", populated / 1024);
  });
  return populated;
}

}  // namespace kiln::jit
