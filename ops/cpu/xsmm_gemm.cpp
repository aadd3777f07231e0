#include "ops/cpu/xsmm_gemm.h"

#include <libxsmm.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <vector>

#include "runtime/config.h"
#include "runtime/fork_handlers.h"
#include "runtime/logging.h"

namespace kiln::blas {
namespace {

// fork(): libxsmm guards its code registry with spin locks of its own and registers no fork
// handler, so a child forked while another thread was generating a kernel inherited that lock
// held and spun forever at its first kernel of a new shape (tests/test_xsmm_gemm.cpp
// ForkWhileAnotherThreadGeneratesKernels: 9-10 of 300 children hung on the 2-core Zen 5 VM,
// none with KILN_GEMM=openblas). Every call into libxsmm but a generated kernel's (init,
// dispatch, transposition) holds this lock shared; fork() takes it exclusively (registered
// before the first such call, runtime/fork_handlers.h: in the last stage, after a plan being
// made, which may call libxsmm, has finished), so no thread is inside libxsmm when the child is
// made.
// The child unlocks it and makes it anew: a thread of the parent waiting to read
// (pthread_rwlock's waiter counts) left it unusable in the child, whose first product hung there
// when it was only unlocked; the unlock first tells ThreadSanitizer, which does not see the
// remaking, that the lock is free (it reported the child's first product as reading a
// write-locked lock).
std::shared_mutex* g_fork_guard = nullptr;
std::shared_mutex& fork_guard() {
  static const bool made = [] {
    g_fork_guard = new std::shared_mutex();  // never destroyed: products may run at exit
    on_fork(ForkStage::Libraries, {[] { g_fork_guard->lock(); }, [] { g_fork_guard->unlock(); },
                                   [] {
                                     g_fork_guard->unlock();
                                     remake_after_fork(*g_fork_guard);
                                   }});
    return true;
  }();
  (void)made;
  return *g_fork_guard;
}

// The packed panel: one per thread, kept between products (no allocation in the steady state:
// tests/test_jit_matmul.cpp counts them). It is trivially destructible, so a product computed
// from another thread_local's destructor at the thread's exit (a recorder flushing its last
// ops) still finds it; its owner frees it at the thread's exit, and a product after that takes
// a buffer of its own (`own`). A thread_local std::vector here was freed before such a flush
// used it: heap corruption (XsmmGemm.AProductFlushedAtItsThreadsExitIsComputed).
struct PanelBuffer {
  float* data = nullptr;
  int64_t capacity = 0;
  bool released = false;
};
constinit thread_local PanelBuffer t_panel;

void free_panel(float* p) { ::operator delete[](p, std::align_val_t{64}); }

struct PanelOwner {
  bool armed = false;
  ~PanelOwner() {
    free_panel(t_panel.data);
    t_panel = {nullptr, 0, true};
  }
};
thread_local PanelOwner t_panel_owner;

float* thread_panel(int64_t floats, std::vector<float>& own) {
  if (t_panel.released) {
    own.resize(size_t(floats));
    return own.data();
  }
  t_panel_owner.armed = true;  // constructs the owner in this thread: its destructor runs
  if (floats > t_panel.capacity) {
    free_panel(t_panel.data);
    t_panel.data = nullptr;
    t_panel.capacity = 0;
    t_panel.data =
        static_cast<float*>(::operator new[](size_t(floats) * sizeof(float), std::align_val_t{64}));
    t_panel.capacity = floats;
  }
  return t_panel.data;
}

// Whether libxsmm generates code here: a probe kernel (libxsmm's own cache keeps it).
bool libxsmm_generates() {
  static const bool ok = [] {
    std::shared_lock lock(fork_guard());
    libxsmm_init();
    const libxsmm_blasint m = kPanelCols, n = kBlockRows, k = 64;
    const float alpha = 1, beta = 0;
    const int flags = LIBXSMM_GEMM_FLAGS('N', 'N'), prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
    const bool generated =
        libxsmm_smmdispatch(m, n, k, &m, &k, &m, &alpha, &beta, &flags, &prefetch) != nullptr;
    if (!generated)
      KILN_WARN(Ops, "libxsmm generates no float32 kernels on this CPU ({}): matmul uses OpenBLAS",
                libxsmm_get_target_arch());
    return generated;
  }();
  return ok;
}

// The kernels of one product: [tail panel][tail rows][tail depth][accumulate].
class Kernels {
 public:
  // lda: op(B)'s leading dim as the kernels read it (0: a packed panel's width).
  Kernels(const Layout& la, int64_t lda, int64_t ldc) : la_(la), lda_(lda), ldc_(ldc) {}

  libxsmm_smmfunction get(int64_t width, int64_t rows, int64_t depth, bool accumulate) {
    const int i = (width != kPanelCols) * 8 + (rows != kBlockRows) * 4 +
                  (depth != kDepthBlock) * 2 + accumulate;
    if (!tried_[i]) {
      tried_[i] = true;
      const libxsmm_blasint m = libxsmm_blasint(width), n = libxsmm_blasint(rows),
                            k = libxsmm_blasint(depth);
      const libxsmm_blasint lda = lda_ ? libxsmm_blasint(lda_) : m, ldb = libxsmm_blasint(la_.ld),
                            ldc = libxsmm_blasint(ldc_);
      const float alpha = 1, beta = accumulate ? 1.0f : 0.0f;
      // The kernel is column-major: C^T [N, M] = op(B)^T [N, K] @ op(A)^T [K, M], op(B)^T
      // being the packed panel; a transposed A is the kernel's transposed second operand.
      const int flags = LIBXSMM_GEMM_FLAGS('N', la_.trans ? 'T' : 'N');
      const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
      std::shared_lock lock(fork_guard());
      fn_[i] = libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
    }
    return fn_[i];
  }

 private:
  Layout la_;
  int64_t lda_, ldc_;
  bool tried_[16] = {};
  libxsmm_smmfunction fn_[16] = {};
};

// Packs op(B)'s columns [n0, n0 + width) as [K, width].
void pack_panel(const Layout& lb, const float* B, int64_t K, int64_t n0, int64_t width,
                float* dst) {
  if (!lb.trans) {  // op(B)(k, n) at B[k * ld + n]
    for (int64_t k = 0; k < K; ++k)
      std::memcpy(dst + k * width, B + k * lb.ld + n0, size_t(width) * sizeof(float));
    return;
  }
  // op(B)(k, n) at B[n * ld + k]: column-major [K, width] with leading dim ld, transposed.
  std::shared_lock lock(fork_guard());
  libxsmm_otrans(dst, B + n0 * lb.ld, sizeof(float), libxsmm_blasint(K), libxsmm_blasint(width),
                 libxsmm_blasint(lb.ld), libxsmm_blasint(width));
}

}  // namespace

bool xsmm_enabled() {
  const std::string& choice = config().gemm;
  return choice != "openblas" && libxsmm_generates();
}

bool xsmm_gemm(const Layout& la, const Layout& lb, int64_t M, int64_t N, int64_t K, const float* A,
               const float* B, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0 || !xsmm_enabled()) return false;
  if (ldc == 0) ldc = N;
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX || la.ld > INT_MAX || lb.ld > INT_MAX ||
      ldc > INT_MAX)
    return false;
  // A panel is packed where it is read by several blocks of rows: for a few rows of C, copying
  // op(B) costs as much as the product (16x256x256: 22 µs packed, 18 on OpenBLAS), and the
  // kernels read a row-major B where it lies. A kernel's operations do not depend on its leading
  // dims, so both ways give the same bits (XsmmGemm.BlocksAndThreadsGiveTheBitsOfOneCall splits
  // a packed product into blocks that are not).
  const bool pack = lb.trans || M > kPackMinRows;
  Kernels kernels(la, pack ? 0 : lb.ld, ldc);
  // Every kernel the loop below calls, before anything is written: the first panel's and the
  // last's widths, the first block's and the last's rows, each depth block (cached by shape).
  for (int64_t width : {std::min(N, kPanelCols), N - (N - 1) / kPanelCols * kPanelCols})
    for (int64_t rows : {std::min(M, kBlockRows), M - (M - 1) / kBlockRows * kBlockRows})
      for (int64_t k0 = 0; k0 < K; k0 += kDepthBlock)
        if (!kernels.get(width, rows, std::min(kDepthBlock, K - k0), k0 > 0)) return false;
  std::vector<float> own;  // a product after the thread's panel was released (at its exit)
  float* panel = pack ? thread_panel(K * std::min(N, kPanelCols), own) : nullptr;
  for (int64_t n0 = 0; n0 < N; n0 += kPanelCols) {
    const int64_t width = std::min(kPanelCols, N - n0);
    if (pack) pack_panel(lb, B, K, n0, width, panel);
    const float* b = pack ? panel : B + n0;
    const int64_t ldb = pack ? width : lb.ld;
    for (int64_t m0 = 0; m0 < M; m0 += kBlockRows) {
      const int64_t rows = std::min(kBlockRows, M - m0);
      for (int64_t k0 = 0; k0 < K; k0 += kDepthBlock) {
        const int64_t depth = std::min(kDepthBlock, K - k0);
        kernels.get(width, rows, depth, k0 > 0)(b + k0 * ldb, A + offset_of(la, m0, k0),
                                                C + m0 * ldc + n0);
      }
    }
  }
  return true;
}

}  // namespace kiln::blas
