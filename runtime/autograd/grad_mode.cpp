#include "runtime/autograd/grad_mode.h"

namespace kiln {

namespace {
thread_local bool tls_grad_enabled = true;
}

bool GradMode::is_enabled() { return tls_grad_enabled; }
void GradMode::set_enabled(bool on) { tls_grad_enabled = on; }

}  // namespace kiln
