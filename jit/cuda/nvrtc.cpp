#include "jit/cuda/nvrtc.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "jit/loop/content_hash.h"
#include "runtime/cuda/nvrtc_library.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "tracer/dump.h"

namespace kiln::jit::cuda {

using kiln::cuda::kNvrtcSuccess;
using kiln::cuda::nvrtcProgram;
using kiln::cuda::nvrtcResult;

std::string sm_arch(int sm) { return fmt::format("sm_{}", sm); }

std::vector<std::string> nvrtc_options(int sm) {
  return {"--gpu-architecture=" + sm_arch(sm), "--std=c++17", "-default-device", "--fmad=false"};
}

std::vector<int> nvrtc_supported_archs() {
  const auto& api = kiln::cuda::nvrtc();
  int n = 0;
  KILN_CHECK(api.nvrtcGetNumSupportedArchs(&n) == kNvrtcSuccess && n >= 0,
             "nvrtcGetNumSupportedArchs failed");
  std::vector<int> archs(size_t(n), 0);
  KILN_CHECK(n == 0 || api.nvrtcGetSupportedArchs(archs.data()) == kNvrtcSuccess,
             "nvrtcGetSupportedArchs failed");
  return archs;
}

std::string nvrtc_version() {
  kiln::cuda::nvrtc();  // throws with the reason when NVRTC is missing
  return kiln::cuda::nvrtc_status().version();
}

namespace {

// The sm_XX number of the --gpu-architecture option, or -1 (then NVRTC's own check reports it).
int arch_of(const std::vector<std::string>& options) {
  for (const auto& o : options) {
    for (std::string_view prefix : {"--gpu-architecture=sm_", "-arch=sm_"}) {
      if (o.starts_with(prefix)) {
        std::string_view rest = std::string_view(o).substr(prefix.size());
        int v = 0;
        for (char c : rest) {
          if (c < '0' || c > '9') break;
          v = v * 10 + (c - '0');
        }
        return v;
      }
    }
  }
  return -1;
}

std::string program_log(const kiln::cuda::Nvrtc& api, nvrtcProgram p) {
  size_t n = 0;
  if (api.nvrtcGetProgramLogSize(p, &n) != kNvrtcSuccess || n <= 1) return "";
  std::string log(n, '\0');
  if (api.nvrtcGetProgramLog(p, log.data()) != kNvrtcSuccess) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// Writes the failing source and NVRTC's log when KILN_DUMP asks for code; says where.
std::string dump_failure(std::string_view name, std::string_view source, const std::string& log) {
  const std::string stem = fmt::format("cuda-{}-{}", tracer::dump_file_stem(name),
                                       content_hash_hex128(source).substr(0, 16));
  const bool cu = tracer::dump_text(tracer::DumpKind::Code, stem + ".cu", std::string(source));
  const bool lg = tracer::dump_text(tracer::DumpKind::Code, stem + ".log", log);
  if (!cu && !lg) return " (set KILN_DUMP=code to keep the source and log)";
  return fmt::format(" (source and log dumped as {}.cu/.log in {})", stem,
                     tracer::dump_settings().dir);
}

struct ProgramGuard {
  const kiln::cuda::Nvrtc& api;
  nvrtcProgram p = nullptr;
  ~ProgramGuard() {
    if (p != nullptr) api.nvrtcDestroyProgram(&p);
  }
};

}  // namespace

std::vector<char> nvrtc_compile(std::string_view source, std::string_view name,
                                const std::vector<std::string>& options) {
  const auto& api = kiln::cuda::nvrtc();
  const int sm = arch_of(options);
  KILN_CHECK(sm > 0, "nvrtc: kernel '{}': the options [{}] name no sm_XX architecture", name,
             fmt::join(options, " "));
  if (auto archs = nvrtc_supported_archs();
      std::find(archs.begin(), archs.end(), sm) == archs.end())
    fail("nvrtc: kernel '{}': NVRTC {} cannot compile for {}; it supports sm_{}", name,
         nvrtc_version(), sm_arch(sm), fmt::join(archs, ", sm_"));

  const std::string src(source);  // NVRTC wants it NUL-terminated
  const std::string file = tracer::dump_file_stem(name) + ".cu";
  ProgramGuard prog{api};
  nvrtcResult r = api.nvrtcCreateProgram(&prog.p, src.c_str(), file.c_str(), 0, nullptr, nullptr);
  KILN_CHECK(r == kNvrtcSuccess, "nvrtc: kernel '{}': nvrtcCreateProgram failed: {}", name,
             api.nvrtcGetErrorString(r));
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  r = api.nvrtcCompileProgram(prog.p, int(opts.size()), opts.data());
  std::string log = program_log(api, prog.p);
  if (r != kNvrtcSuccess) {
    std::string where = dump_failure(name, source, log);
    fail("nvrtc: kernel '{}' does not compile for {} ({}){}:\n{}", name, sm_arch(sm),
         api.nvrtcGetErrorString(r), where, log);
  }
  if (!log.empty()) KILN_DEBUG(Jit, "nvrtc: kernel '{}': {}", name, log);
  size_t n = 0;
  r = api.nvrtcGetCUBINSize(prog.p, &n);
  // compute_XX targets produce PTX only and report a CUBIN of size 0 with success.
  KILN_CHECK(r == kNvrtcSuccess && n > 0, "nvrtc: kernel '{}': no CUBIN for {} ({})", name,
             sm_arch(sm), api.nvrtcGetErrorString(r));
  std::vector<char> cubin(n);
  r = api.nvrtcGetCUBIN(prog.p, cubin.data());
  KILN_CHECK(r == kNvrtcSuccess, "nvrtc: kernel '{}': nvrtcGetCUBIN failed: {}", name,
             api.nvrtcGetErrorString(r));
  return cubin;
}

}  // namespace kiln::jit::cuda
