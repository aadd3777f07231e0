// See perf/run_disk_cache.h.
#include "perf/run_disk_cache.h"

#include <stdlib.h>

#include <filesystem>
#include <system_error>

#include "jit/cpu/disk_cache.h"
#include "jit/loop/disk_cache_writer.h"

namespace kiln::perf {

namespace {
std::string g_run_folder;  // "" without one
int g_jobs = 0;
}  // namespace

RunDiskCache::RunDiskCache() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "kiln-perf-cache-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return;
  g_run_folder = pattern;
  jit::set_cpu_kernel_disk_root(g_run_folder);
}

RunDiskCache::~RunDiskCache() {
  if (g_run_folder.empty()) return;
  jit::flush_disk_cache_writes();  // none lands in the folder after it is gone
  std::error_code ec;
  std::filesystem::remove_all(g_run_folder, ec);
  g_run_folder.clear();
}

void use_fresh_job_disk_cache() {
  if (g_run_folder.empty()) return;
  jit::set_cpu_kernel_disk_root(
      (std::filesystem::path(g_run_folder) / ("job" + std::to_string(++g_jobs))).string());
}

}  // namespace kiln::perf
