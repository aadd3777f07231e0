// One-time initialisation. Higher layers register their implementations of the seams that lower
// layers define (op definitions, the recorder, the JIT) in kiln::init(), which the dispatcher calls
// once before the first op. No static self-registration: kiln is a static library.
#pragma once

namespace kiln {

void init();  // defined by the top layer (jit/init.cpp); idempotent, thread-safe
inline void ensure_initialized() {
  static const bool done = (init(), true);
  (void)done;
}

}  // namespace kiln
