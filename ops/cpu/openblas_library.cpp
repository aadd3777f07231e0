#include "ops/cpu/openblas_library.h"

#include <cblas.h>
#include <dlfcn.h>

#include <array>
#include <cstdlib>

#include "ops/cpu/blas_core_hint.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/shared_library.h"

// The configure-time library (cmake/KilnDependencies.cmake), tried after the soname.
#ifndef KILN_OPENBLAS_LIBRARY
#define KILN_OPENBLAS_LIBRARY "libopenblas.so"
#endif

namespace kiln::blas {

static_assert(int(CblasRowMajor) == kRowMajor && int(CblasNoTrans) == kNoTrans &&
              int(CblasTrans) == kTrans);

namespace {

constexpr const char* kSoname = "libopenblas.so.0";

struct Loaded {
  OpenBlas api;
  OpenBlasStatus status;
};

Loaded load() {
  Loaded out;
  OpenBlasStatus& st = out.status;
  // Already in the process (the program links it): its kernels are chosen; only warn below.
  if (void* h = dlopen(kSoname, RTLD_NOW | RTLD_NOLOAD); h != nullptr) st.loaded_before = true;
  if (!st.loaded_before && std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    if (const char* core = openblas_core_for(host_blas_features()))
      if (setenv("OPENBLAS_CORETYPE", core, 0) == 0) st.core_hint = core;
  }
  const std::array<const char*, 2> names{kSoname, KILN_OPENBLAS_LIBRARY};
  const SharedLibrary lib = SharedLibrary::open(names);
  if (!lib.loaded()) {
    st.reason = lib.why();
    return out;
  }
  st.path = lib.path();
  OpenBlas& a = out.api;
  const bool all = lib.resolve(a.sgemm, "cblas_sgemm") && lib.resolve(a.dgemm, "cblas_dgemm") &&
                   lib.resolve(a.sgemv, "cblas_sgemv") && lib.resolve(a.dgemv, "cblas_dgemv") &&
                   lib.resolve(a.sdot, "cblas_sdot") && lib.resolve(a.ddot, "cblas_ddot") &&
                   lib.resolve(a.set_num_threads, "openblas_set_num_threads") &&
                   lib.resolve(a.get_num_threads, "openblas_get_num_threads") &&
                   lib.resolve(a.get_corename, "openblas_get_corename");
  if (!all) {
    st.reason = st.path + " lacks a cblas_* or openblas_* entry point kiln calls";
    return out;
  }
  st.usable = true;
  const char* core = a.get_corename();
  st.core = core != nullptr ? core : "";
  KILN_INFO(Ops, "OpenBLAS from {}: {} kernels{}", st.path, st.core,
            st.core_hint.empty() ? "" : " (OPENBLAS_CORETYPE set by kiln)");
  warn_if_slow_openblas_core(core, st.loaded_before
                                       ? "the program loaded OpenBLAS before kiln could pick"
                                       : "OPENBLAS_CORETYPE is set so");
  return out;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const OpenBlasStatus& openblas_status() { return loaded().status; }

const OpenBlas& openblas() {
  const Loaded& l = loaded();
  if (!l.status.usable) [[unlikely]]
    throw Error(fmt::format("matmul needs OpenBLAS ({}), which could not be loaded: {}", kSoname,
                            l.status.reason));
  return l.api;
}

}  // namespace kiln::blas
