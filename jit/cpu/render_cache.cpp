#include "jit/cpu/render_cache.h"

#include <asmjit/x86.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "jit/cpu/code_memory.h"
#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/disk_cache.h"
#include "jit/cpu/time_log.h"
#include "jit/loop/disk_cache_writer.h"
#include "jit/loop/kernel_cache.h"
#include "ops/cpu/store_choice.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/profiler.h"
#include "tracer/dump.h"

namespace kiln::jit {

namespace {

std::atomic<int> g_injected_faults{0};

// Per-kernel rendering times (cpu_jit_compile_times): a few bytes per kernel, like the kernels.
TimeLog& compile_times() {
  static auto* t = new TimeLog();  // never destroyed: planning may run during exit
  return *t;
}

KernelCache<KernelFn>& fn_cache() {
  static auto* c = new KernelCache<KernelFn>();
  return *c;
}

// The cache key of one rendering: the kernel and everything the variant changes.
std::vector<uint64_t> render_key(const LoopKernel& k, const KernelVariant& v, RenderPath path) {
  std::vector<uint64_t> key = encode(k);
  key.push_back(0x6370753a00000000ull | static_cast<uint64_t>(v.isa));  // "cpu:" + isa
  key.push_back(v.streaming);
  key.push_back(static_cast<uint64_t>(v.unroll));
  key.push_back(v.columns);
  key.push_back(v.pipeline);
  for (InnerLayout l : v.layout) key.push_back(static_cast<uint64_t>(l));
  // Which emitter may render it (KILN_JIT_ASSEMBLER): the code differs (registers), the results
  // do not; keyed so that tests can compare the two renderings of one kernel.
  key.push_back(static_cast<uint64_t>(path));
  return key;
}

// KILN_DUMP=asm: one file per rendering (the loop IR, for reference, then the assembly).
void dump_assembly(const LoopKernel& k, const KernelVariant& v, const std::string& assembly) {
  std::string layouts;
  for (InnerLayout l : v.layout)
    layouts += l == InnerLayout::Contiguous ? 'c' : l == InnerLayout::Broadcast ? 'b' : 's';
  if (v.streaming) layouts += "-nt";
  if (v.unroll > 1) layouts += fmt::format("-u{}", v.unroll);
  if (v.columns) layouts += "-cols";
  if (!v.pipeline) layouts += "-nopipe";
  const std::string name =
      fmt::format("kernel-{:016x}-{}-{}.s", hash_words(encode(k)), jit_isa_name(v.isa), layouts);
  std::string ir = to_text(k), commented;
  for (size_t at = 0; at < ir.size();) {  // the IR as assembler comments
    const size_t nl = ir.find('\n', at);
    commented += "# " + ir.substr(at, nl == std::string::npos ? std::string::npos : nl - at) + "\n";
    at = nl == std::string::npos ? ir.size() : nl + 1;
  }
  tracer::dump_text(tracer::DumpKind::Asm, name, commented + assembly);
}

// The calling thread's minor page faults so far: a render's first touches of memory (docs/jit.md
// "The warm-up"), printed with KILN_LOG=jit=debug.
int64_t thread_minor_faults() {
  rusage u{};
  return ::getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_minflt : 0;
}

// The emitter KILN_JIT_ASSEMBLER selects.
RenderPath configured_render_path() {
  return config().jit_assembler ? RenderPath::Auto : RenderPath::Compiler;
}

// A kernel from the disk cache (disk_cache.h), or nullptr: counted and logged apart from renders,
// traced as a kernel compile named "... from disk".
KernelFn load_from_disk(DiskCache& disk, const std::string& material, const LoopKernel& k,
                        const KernelVariant& v) {
  const int64_t t0 = profiler::now_ns();
  std::optional<std::vector<char>> payload = disk.read(material);
  if (!payload) return nullptr;
  KernelFn fn = load_cpu_kernel(cpu_code_runtime(), *payload);
  if (fn == nullptr) {  // a sound file (its checksum held) of a malformed payload: render
    KILN_WARN(Jit, "cpu kernel: a disk cache entry in {} holds no well-formed kernel; rendering it",
              disk.folder());
    return nullptr;
  }
  const int64_t t1 = profiler::now_ns();
  cpu_jit_counters().disk_loads.fetch_add(1);
  if (profiler::enabled())
    profiler::record_kernel_compile(
        fmt::format("kernel {:016x} {} from disk", hash_words(encode(k)), jit_isa_name(v.isa)), t0,
        t1);
  KILN_DEBUG(Jit, "cpu kernel: {} bytes loaded from {} in {} us", payload->size(), disk.folder(),
             (t1 - t0) / 1000);
  return fn;
}

}  // namespace

KernelFn render_cached(const LoopKernel& k, const KernelVariant& v) {
  const RenderPath path = configured_render_path();
  const std::vector<uint64_t> key = render_key(k, v, path);
  // A streaming variant's ordinary twin (render.h), made with it unless that variant is cached.
  KernelVariant ordinary = v;
  ordinary.streaming = false;
  const std::vector<uint64_t> twin_key =
      v.streaming ? render_key(k, ordinary, path) : std::vector<uint64_t>{};
  RenderedKernel twin;
  // (Not under KILN_JIT_STREAMING=on, where no launch runs it; contains() before make(), which
  // runs under the cache's lock.)
  const bool want_twin = v.streaming &&
                         StoreChoice::mode_from(config().jit_streaming) != StoreChoice::Mode::On &&
                         !fn_cache().contains(twin_key);
  KernelFn fn = fn_cache().get_or_make(key, [&] {
    if (g_injected_faults.load() > 0 && g_injected_faults.fetch_sub(1) > 0)
      fail("cpu kernel: injected codegen fault");
    const bool dump = tracer::dump_settings().wants(tracer::DumpKind::Asm);
    // The disk cache, but for a dump of the assembly (only a render makes its listing).
    const std::shared_ptr<DiskCache> disk = dump ? nullptr : cpu_kernel_disk_cache();
    const std::string material = disk ? cpu_kernel_material(key, renderer_fingerprint()) : "";
    if (disk)
      if (KernelFn fn = load_from_disk(*disk, material, k, v)) return fn;
    const int64_t faults0 = thread_minor_faults();
    const int64_t t0 = profiler::now_ns();
    RenderedKernel r =
        render_cpu_kernel(cpu_code_runtime(), k, v, dump, path, want_twin ? &twin : nullptr);
    const int64_t t1 = profiler::now_ns();
    if (profiler::enabled())
      profiler::record_kernel_compile(
          fmt::format("kernel {:016x} {}", hash_words(encode(k)), jit_isa_name(v.isa)), t0, t1);
    CpuJitCounters& c = cpu_jit_counters();
    c.kernels.fetch_add(1);
    if (r.assembler) c.assembled.fetch_add(1);
    if (!r.fallback.empty()) {  // the fast path gave this kernel up: rendered by the Compiler
      c.assembler_fallbacks.fetch_add(1);
      profiler::record_fallback("cpu kernel assembler", r.fallback);
      KILN_DEBUG(Jit, "cpu kernel: the fast path gave up ({}); rendered by the Compiler",
                 r.fallback);
    }
    c.compile_ns.fetch_add(t1 - t0);
    int64_t prev = c.max_compile_ns.load();
    while (prev < t1 - t0 && !c.max_compile_ns.compare_exchange_weak(prev, t1 - t0)) {
    }
    { compile_times().add(t1 - t0); }
    KILN_DEBUG(Jit, "cpu kernel: {} bytes of {} code in {} us ({}; {} minor page faults)",
               r.code_bytes, jit_isa_name(v.isa), (t1 - t0) / 1000,
               r.assembler ? "assembler" : "compiler", thread_minor_faults() - faults0);
    if (dump) dump_assembly(k, v, r.assembly);
    if (disk)  // off this thread: a write cost as much as the render (disk_cache_writer.h)
      if (std::optional<std::vector<char>> payload = cpu_kernel_payload(r))
        write_in_background(disk, material, std::move(*payload));
    if (twin.fn != nullptr) {
      c.twins.fetch_add(1);
      if (dump) dump_assembly(k, ordinary, twin.assembly);
      if (disk)
        if (std::optional<std::vector<char>> payload = cpu_kernel_payload(twin))
          write_in_background(disk, cpu_kernel_material(twin_key, renderer_fingerprint()),
                              std::move(*payload));
    }
    return r.fn;
  });
  if (twin.fn != nullptr) fn_cache().put(twin_key, twin.fn);
  return fn;
}

KernelFn cached_rendering(const LoopKernel& k, const KernelVariant& v) {
  return fn_cache().lookup(render_key(k, v, configured_render_path()), nullptr);
}

CpuJitCounters& cpu_jit_counters() {
  static auto* c = new CpuJitCounters();  // never destroyed: planning may run during exit
  return *c;
}

std::vector<int64_t> cpu_jit_compile_times(size_t first) { return compile_times().since(first); }

size_t cpu_jit_compile_count() { return compile_times().size(); }

void render_and_discard_cpu_kernel(const LoopKernel& k, const KernelVariant& v) {
  RenderedKernel r = render_cpu_kernel(cpu_code_runtime(), k, v, false, configured_render_path());
  cpu_code_runtime().release(r.fn);
}

void inject_cpu_codegen_faults(int count) { g_injected_faults.store(count); }

void forget_cpu_kernels() { fn_cache().clear(); }

}  // namespace kiln::jit
