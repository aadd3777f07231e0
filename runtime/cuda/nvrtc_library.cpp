#include "runtime/cuda/nvrtc_library.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/shared_library.h"

#ifndef KILN_WITH_CUDA
#define KILN_WITH_CUDA 1
#endif

namespace kiln::cuda {

std::string NvrtcStatus::version() const { return fmt::format("{}.{}", major, minor); }

std::string NvrtcStatus::fingerprint() const {
  return fmt::format("nvrtc {} ({} bytes)", version(), file_size);
}

LoadedNvrtc load_nvrtc(std::span<const char* const> names) {
  LoadedNvrtc n;
  NvrtcStatus& st = n.status;
  SharedLibrary lib = SharedLibrary::open(names);
  if (!lib.loaded()) {
    st.reason = fmt::format("no libnvrtc ({})", lib.why());
    return n;
  }
  st.path = lib.path();
  const char* missing = nullptr;
#define KILN_NVRTC_RESOLVE(member, symbol, ret, params) \
  if (!lib.resolve(n.api.member, #symbol) && missing == nullptr) missing = #symbol;
  KILN_NVRTC_API(KILN_NVRTC_RESOLVE)
#undef KILN_NVRTC_RESOLVE
  if (missing != nullptr) {
    st.reason = fmt::format("libnvrtc {} lacks {}: it is older than kiln needs", st.path, missing);
    return n;
  }
  if (n.api.nvrtcVersion(&st.major, &st.minor) != kNvrtcSuccess) {
    st.reason = fmt::format("nvrtcVersion failed in {}", st.path);
    return n;
  }
  std::error_code ec;
  auto size = std::filesystem::file_size(st.path, ec);
  st.file_size = ec ? 0 : uint64_t(size);
  st.usable = true;
  return n;
}

namespace {
const LoadedNvrtc& process_nvrtc() {
  static const LoadedNvrtc n = [] {
    LoadedNvrtc out;
    if (!KILN_WITH_CUDA) {
      out.status.reason = "kiln was built without CUDA (KILN_WITH_CUDA=OFF)";
      return out;
    }
    // Versioned sonames first (the unversioned one exists only with the toolkit's -dev files),
    // then the toolkit's own folder, which is often not on the loader's path.
    std::vector<std::string> owned = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    const char* home = std::getenv("CUDA_HOME");
    for (std::string dir :
         {std::string(home != nullptr ? home : ""), std::string("/usr/local/cuda")}) {
      if (dir.empty()) continue;
      owned.push_back(dir + "/lib64/libnvrtc.so.13");
      owned.push_back(dir + "/lib64/libnvrtc.so.12");
    }
    std::vector<const char*> names;
    for (const auto& s : owned) names.push_back(s.c_str());
    out = load_nvrtc(names);
    if (out.status.usable)
      KILN_INFO(Runtime, "NVRTC {} loaded from {}", out.status.version(), out.status.path);
    else
      KILN_INFO(Runtime, "NVRTC is not available: {}", out.status.reason);
    return out;
  }();
  return n;
}
}  // namespace

const NvrtcStatus& nvrtc_status() { return process_nvrtc().status; }

const Nvrtc& nvrtc() {
  const LoadedNvrtc& n = process_nvrtc();
  KILN_CHECK(n.status.usable, "NVRTC is not available: {}", n.status.reason);
  return n.api;
}

}  // namespace kiln::cuda
