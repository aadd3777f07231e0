#include "runtime/cuda/cublas_library.h"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "runtime/cuda/device_context.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/shared_library.h"

#ifndef KILN_WITH_CUDA
#define KILN_WITH_CUDA 1
#endif

namespace kiln::cuda {

std::string CublasStatus::version() const { return fmt::format("{}.{}.{}", major, minor, patch); }

LoadedCublas load_cublas(std::span<const char* const> names) {
  LoadedCublas c;
  CublasStatus& st = c.status;
  SharedLibrary lib = SharedLibrary::open(names);
  if (!lib.loaded()) {
    st.reason = fmt::format("no libcublas ({})", lib.why());
    return c;
  }
  st.path = lib.path();
  const char* missing = nullptr;
#define KILN_CUBLAS_RESOLVE(member, symbol, ret, params) \
  if (!lib.resolve(c.api.member, #symbol) && missing == nullptr) missing = #symbol;
  KILN_CUBLAS_API(KILN_CUBLAS_RESOLVE)
#undef KILN_CUBLAS_RESOLVE
  if (missing != nullptr) {
    st.reason = fmt::format("libcublas {} lacks {}: it is older than kiln needs", st.path, missing);
    return c;
  }
  // cublasGetProperty needs no GPU and no handle.
  if (c.api.cublasGetProperty(kMajorVersion, &st.major) != kCublasSuccess ||
      c.api.cublasGetProperty(kMinorVersion, &st.minor) != kCublasSuccess ||
      c.api.cublasGetProperty(kPatchLevel, &st.patch) != kCublasSuccess) {
    st.reason = fmt::format("cublasGetProperty failed in {}", st.path);
    return c;
  }
  st.usable = true;
  return c;
}

namespace {

const LoadedCublas& process_cublas() {
  static const LoadedCublas c = [] {
    LoadedCublas out;
    if (!KILN_WITH_CUDA) {
      out.status.reason = "kiln was built without CUDA (KILN_WITH_CUDA=OFF)";
      return out;
    }
    // Versioned sonames first, then the toolkit's folder (as for libnvrtc).
    std::vector<std::string> owned = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    const char* home = std::getenv("CUDA_HOME");
    for (std::string dir :
         {std::string(home != nullptr ? home : ""), std::string("/usr/local/cuda")}) {
      if (dir.empty()) continue;
      owned.push_back(dir + "/lib64/libcublas.so.13");
      owned.push_back(dir + "/lib64/libcublas.so.12");
    }
    std::vector<const char*> names;
    for (const auto& s : owned) names.push_back(s.c_str());
    out = load_cublas(names);
    if (out.status.usable)
      KILN_INFO(Runtime, "cuBLAS {} loaded from {}", out.status.version(), out.status.path);
    else
      KILN_INFO(Runtime, "cuBLAS is not available: {}", out.status.reason);
    return out;
  }();
  return c;
}

}  // namespace

const CublasStatus& cublas_status() { return process_cublas().status; }

const Cublas& cublas() {
  const LoadedCublas& c = process_cublas();
  KILN_CHECK(c.status.usable, "cuBLAS is not available: {}", c.status.reason);
  return c.api;
}

std::string cublas_error_text(const Cublas& api, cublasStatus_t r) {
  const char* name = api.cublasGetStatusName != nullptr ? api.cublasGetStatusName(r) : nullptr;
  const char* text = api.cublasGetStatusString != nullptr ? api.cublasGetStatusString(r) : nullptr;
  if (name == nullptr) return fmt::format("cuBLAS status {}", r);
  return text != nullptr ? fmt::format("{} ({})", name, text) : std::string(name);
}

void check_cublas(cublasStatus_t r, const char* what) {
  if (r != kCublasSuccess) [[unlikely]]
    fail("{} failed: {}", what, cublas_error_text(process_cublas().api, r));
}

cublasHandle_t cublas_handle(int index) {
  static std::mutex mu;
  static std::array<cublasHandle_t, kMaxDevices> handles{};  // never destroyed, as contexts
  const DeviceContext& ctx = device_context(index);          // raises when the device is not usable
  KILN_CHECK(index < kMaxDevices, "cuda: device index {} is beyond kiln's limit of {}", index,
             kMaxDevices);
  std::lock_guard lock(mu);
  if (handles[index] != nullptr) return handles[index];
  const Cublas& api = cublas();
  make_current(index);  // cublasCreate binds the handle to the current context's device
  cublasHandle_t h = nullptr;
  check_cublas(api.cublasCreate(&h), "cublasCreate");
  check_cublas(api.cublasSetStream(h, ctx.stream), "cublasSetStream");
  check_cublas(api.cublasSetMathMode(h, kCublasDefaultMath), "cublasSetMathMode");
  handles[index] = h;
  return h;
}

}  // namespace kiln::cuda
