// Running a higher-order-op fuzzer program (tests/fuzz/hop_program.h) eagerly or recorded; the
// outcome is compared as the recorder fuzzer's (tests/fuzz/execute.h).
#pragma once
#include <string>

#include "fuzz/execute.h"
#include "fuzz/hop_program.h"

namespace kiln::fuzz {

struct HopRun {
  Outcome outcome;    // reads, errors, the final pool and then the captured tensor w
  int hop_calls = 0;  // higher-order steps that returned without an error
};

// Runs p in the current mode (config().jit), syncing at the end.
HopRun execute_hop(const HopProgram& p);

// The program's seed and shapes, its regions' bodies and the eager run's step trace.
std::string hop_listing(const HopProgram& p, const Outcome& eager);

}  // namespace kiln::fuzz
