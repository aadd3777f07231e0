#include "runtime/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include "runtime/logging.h"

namespace kiln {

SharedLibrary SharedLibrary::open(std::span<const char* const> names) {
  SharedLibrary lib;
  for (const char* name : names) {
    // RTLD_LOCAL: the library's symbols stay out of the global namespace (no clash with a CUDA
    // runtime the user's program links itself); RTLD_NOW: a broken install fails here, not later.
    void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* err = dlerror();
      if (!lib.why_.empty()) lib.why_ += "; ";
      lib.why_ += err != nullptr ? err : name;
      continue;
    }
    lib.handle_ = h;
    lib.why_.clear();
    link_map* map = nullptr;
    if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0')
      lib.path_ = map->l_name;
    else
      lib.path_ = name;
    KILN_DEBUG(Runtime, "loaded {} from {}", name, lib.path_);
    return lib;
  }
  return lib;
}

void* SharedLibrary::symbol(const char* name) const {
  return handle_ != nullptr ? dlsym(handle_, name) : nullptr;
}

}  // namespace kiln
