// The CUDA driver (libcuda.so.1), loaded with dlopen on first use: a table of entry points and a
// status saying whether CUDA is usable on this machine and, when it is not, why (no driver
// installed, cuInit failed with its message, no device). Loading never throws; using the table
// of a driver that is not usable does (driver()).
//
// Never the unversioned libcuda.so: that name is the toolkit's link-time stub, whose cuInit
// always fails.
#pragma once
#include <span>
#include <string>

#include "runtime/cuda/driver_api.h"

namespace kiln::cuda {

struct Driver {
#define KILN_CUDA_MEMBER(member, symbol, ret, params) ret(*member) params = nullptr;
  KILN_CUDA_PROBE_API(KILN_CUDA_MEMBER)
  KILN_CUDA_DRIVER_API(KILN_CUDA_MEMBER)
#undef KILN_CUDA_MEMBER
};

struct DriverStatus {
  bool usable = false;   // loaded, every entry point found, cuInit succeeded, >= 1 device
  std::string reason;    // why it is not usable ("" when it is)
  std::string path;      // the library file that was loaded ("" when none)
  int version = 0;       // cuDriverGetVersion: 13000 is CUDA 13.0 (0 when unknown)
  int device_count = 0;  // devices cuDeviceGetCount reports
};

struct LoadedDriver {
  Driver api;
  DriverStatus status;
};

// Loads a driver from the first of `names` that opens (sonames or paths), resolves every entry
// point, calls cuInit(0) and counts the devices. Never throws. The process-wide driver uses
// {"libcuda.so.1"}; tests load stand-ins (the toolkit's stub, a fake) through it.
LoadedDriver load_driver(std::span<const char* const> names);

// The process's driver, loaded on the first call (thread-safe, once).
const DriverStatus& driver_status();
// Its entry points; throws kiln::Error with driver_status().reason when CUDA is not usable.
const Driver& driver();

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a result code, using `api`'s strings when it can.
std::string error_text(const Driver& api, CUresult r);
// Throws kiln::Error "<what> failed: <error_text>" unless r is CUDA_SUCCESS.
void check(CUresult r, const char* what);

// "13.0" for 13000.
std::string version_string(int cuda_version);

}  // namespace kiln::cuda
