// Running a fuzzer program (tests/fuzz/program.h) eagerly or recorded, and comparing two runs:
// every value read, every kiln::Error (same step, same message) and every tensor left in the
// pool (dtype, geometry, bytes) must be equal.
#pragma once
#include <string>
#include <vector>

#include "fuzz/pool.h"

namespace kiln::fuzz {

struct Outcome {
  std::vector<std::string> log;    // reads and errors, in step order
  std::vector<std::string> pool;   // final pool, one line per slot
  std::vector<std::string> trace;  // what each step did
};

// `segment_limit` > 0 makes recorded runs flush every that many ops (SyncReason::SegmentLimit).
Outcome execute(const Program& p, bool jit, int segment_limit = 0);

// One line per slot: metadata and bytes (or the error reading them raised).
std::vector<std::string> pool_lines(const Pool& pool);

// The first log or pool line where the runs differ, both sides; empty when they agree.
std::string first_difference(const Outcome& eager, const Outcome& lazy);

// The program's seeds, canonical shape and the eager run's step trace.
std::string listing(const Program& p, const Outcome& eager);

// Compares two runs; on a difference, one failure naming the seed with the program listing.
void expect_same(const Program& p, const Outcome& eager, const Outcome& lazy, const char* what);

}  // namespace kiln::fuzz
