// Errors found inside CUDA kernels (an index out of range in gather, index_select, embedding,
// scatter_add, one_hot): a kernel cannot throw, and the host learns of it only when it waits for
// the device. Each device has one error word in device memory, four 64-bit words:
//   [0] the op's OpId + 1 (0: no error), [1] the bad index, [2] the dim, [3] that dim's size.
// The first kernel to find an error claims word 0 with atomicCAS and writes the rest (first error
// wins; later ones are dropped). The next sync point of the device (synchronize(), a copy to the
// host: item, to(kCPU), allclose, kiln::sync ...) reads the word after the stream is idle, clears
// it and raises kiln::Error, e.g.
//   gather: index 7 is out of range for dim 0 of size 5 (found on cuda:0 at the next sync)
// The device stays usable: the kernel that found the error wrote zeros where the index was bad
// and went on. The word is only read when a kernel given it ran since the last read, so sync
// points of programs that never index cost nothing more.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace kiln::cuda {

// The device address of device `index`'s error word (allocated and zeroed on first use); marks
// the device as having a pending check, so call it for each launch of a kernel that may report.
uint64_t kernel_error_word(int index);

// The message of the error word `w` found on device `index` (the kiln::Error's text).
std::string kernel_error_message(const std::array<uint64_t, 4>& w, int index);

// After device `index`'s stream is idle: raises the pending kernel error, if any, and clears it.
void check_kernel_errors(int index);

}  // namespace kiln::cuda
