#include "fuzz/seeds.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kiln::fuzz {
namespace {

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  try {
    return std::stoull(v);
  } catch (...) {
    std::fprintf(stderr, "%s=%s is not a number; using %llu\n", name, v,
                 static_cast<unsigned long long>(fallback));
    return fallback;
  }
}

}  // namespace

SeedRange fuzz_seeds(uint64_t default_count, bool recorded_pass) {
  SeedRange r;
  r.count = env_u64("KILN_FUZZ_SEEDS", default_count);
  r.first = env_u64("KILN_FUZZ_OFFSET", 1) + (recorded_pass ? kRecordedPassOffset : 0);
  std::printf("[fuzz] seeds %llu..%llu (KILN_FUZZ_SEEDS=%llu KILN_FUZZ_OFFSET=%llu%s)\n",
              static_cast<unsigned long long>(r.first),
              static_cast<unsigned long long>(r.end() - 1),
              static_cast<unsigned long long>(r.count),
              static_cast<unsigned long long>(r.first - (recorded_pass ? kRecordedPassOffset : 0)),
              recorded_pass ? ", recorded pass" : "");
  return r;
}

}  // namespace kiln::fuzz
