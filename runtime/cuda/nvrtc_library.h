// libnvrtc, loaded with dlopen on first use (the runtime layer loads it so that
// cuda_is_available() can say "no libnvrtc"; jit/cuda/nvrtc.h compiles with it). Tries
// libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so and the toolkit's /usr/local/cuda/lib64 (or
// $CUDA_HOME/lib64) copies. Loading never throws.
//
// The first dlopen of the ~100 MB library costs ~230 ms cold (8 ms warm), so nothing loads it
// before CUDA is actually asked for.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "runtime/cuda/nvrtc_api.h"

namespace kiln::cuda {

struct Nvrtc {
#define KILN_NVRTC_MEMBER(member, symbol, ret, params) ret(*member) params = nullptr;
  KILN_NVRTC_API(KILN_NVRTC_MEMBER)
#undef KILN_NVRTC_MEMBER
};

struct NvrtcStatus {
  bool usable = false;
  std::string reason;        // why not ("" when usable)
  std::string path;          // the library file loaded
  int major = 0, minor = 0;  // nvrtcVersion
  // Size of the library file: nvrtcVersion only says major.minor, so two patch releases of
  // 13.0 (which may emit different code) are told apart by this (kernel cache keys use it).
  uint64_t file_size = 0;
  std::string version() const;      // "13.0"
  std::string fingerprint() const;  // "nvrtc 13.0 (<file size> bytes)": part of cache keys
};

struct LoadedNvrtc {
  Nvrtc api;
  NvrtcStatus status;
};

// Loads NVRTC from the first of `names` that opens and resolves every entry point. Never throws.
LoadedNvrtc load_nvrtc(std::span<const char* const> names);

// The process's NVRTC, loaded on the first call (thread-safe, once).
const NvrtcStatus& nvrtc_status();
// Its entry points; throws kiln::Error with nvrtc_status().reason when it is not usable.
const Nvrtc& nvrtc();

}  // namespace kiln::cuda
