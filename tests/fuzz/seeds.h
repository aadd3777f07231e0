// Which seeds a fuzzer runs (docs/testing.md, "Fuzzers"):
//   KILN_FUZZ_SEEDS   how many programs (default: the fuzzer's own count, fixed so CI is
//                     reproducible);
//   KILN_FUZZ_OFFSET  the first seed (default 1).
// The suite runs twice, eagerly (KILN_JIT=0) and recorded (KILN_JIT=1); the fuzzers compare both
// modes themselves either way, so the recorded pass starts kRecordedPassOffset seeds further and
// covers programs the eager pass does not.
#pragma once
#include <cstdint>

namespace kiln::fuzz {

constexpr uint64_t kRecordedPassOffset = 1'000'000;

struct SeedRange {
  uint64_t first = 1;
  uint64_t count = 0;
  uint64_t end() const { return first + count; }  // one past the last seed
};

// Reads the environment; `recorded_pass` is whether KILN_JIT was on when the test started.
SeedRange fuzz_seeds(uint64_t default_count, bool recorded_pass);

}  // namespace kiln::fuzz
