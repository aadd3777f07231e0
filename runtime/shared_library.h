// SharedLibrary: a library opened with dlopen at run time (libcuda, libnvrtc, libcublas,
// OpenBLAS), so that kiln never links a CUDA library (one build runs on machines with and
// without a GPU) and picks OpenBLAS's kernels before it loads (ops/cpu/openblas_library.h). A
// library stays loaded for the whole process (never dlclose'd: the driver must outlive every static
// destructor that might still release device memory), and opening it never throws: a library that
// cannot be found reports why, and the caller turns that into "CUDA is not available because ...".
#pragma once
#include <span>
#include <string>

namespace kiln {

class SharedLibrary {
 public:
  SharedLibrary() = default;

  // Tries each name in order (a soname searched the usual way, or a path) and keeps the first that
  // loads. On failure `why()` lists every name tried with dlerror's message.
  static SharedLibrary open(std::span<const char* const> names);

  bool loaded() const { return handle_ != nullptr; }
  const std::string& why() const { return why_; }
  // The file the loader picked (resolved through the link map), for logs and fingerprints.
  const std::string& path() const { return path_; }

  // The address of `name`, or nullptr when the library does not export it.
  void* symbol(const char* name) const;
  // The symbol as a typed function pointer (nullptr when missing).
  template <class Fn>
  bool resolve(Fn& fn, const char* name) const {
    fn = reinterpret_cast<Fn>(symbol(name));
    return fn != nullptr;
  }

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string why_;
};

}  // namespace kiln
