#include "fuzz/execute.h"

#include <gtest/gtest.h>

#include <sstream>

#include "fuzz/run_step.h"

namespace kiln::fuzz {

Outcome execute(const Program& p, bool jit, int segment_limit) {
  const int saved_limit = config().jit_segment_limit;
  if (segment_limit > 0) config().jit_segment_limit = segment_limit;
  config().jit = jit;
  manual_seed(p.seed);
  Outcome out;
  Pool pool(kPool);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    std::string desc;
    if (jit && p.steps[i].kind == Kind::Toggle) config().jit = !config().jit;
    try {
      run_step(p.steps[i], pool, out.log, desc);
    } catch (const Error& e) {
      out.log.push_back("step " + std::to_string(i) + " (" + desc + ") error: " + e.what());
    }
    out.trace.push_back(std::to_string(i) + ": " + desc);
  }
  try {
    sync();
  } catch (const Error& e) {
    out.log.push_back(std::string("final sync error: ") + e.what());
  }
  out.pool = pool_lines(pool);
  pool.clear();
  sync();
  config().jit = false;
  config().jit_segment_limit = saved_limit;
  return out;
}

std::vector<std::string> pool_lines(const Pool& pool) {
  std::vector<std::string> lines;
  for (int k = 0; k < static_cast<int>(pool.size()); ++k) {
    const Tensor& t = pool[k];
    std::string line = slot_name(k);
    line += ": ";
    if (!t.defined()) {
      lines.push_back(line + "undefined");
      continue;
    }
    line += show(t) + " strides=" + shape_str(t.strides()) +
            " off=" + std::to_string(t.storage_offset()) + " ";
    try {
      line += byte_string(t);
    } catch (const Error& e) {
      line += std::string("error: ") + e.what();
    }
    lines.push_back(line);
  }
  return lines;
}

std::string first_difference(const Outcome& eager, const Outcome& lazy) {
  auto first_diff = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      const std::string x = i < a.size() ? a[i] : "(missing)";
      const std::string y = i < b.size() ? b[i] : "(missing)";
      if (x != y) return "eager: " + x + "\n  " + "jit:   " + y;
    }
    return std::string();
  };
  const std::string dl = first_diff(eager.log, lazy.log);
  return dl.empty() ? first_diff(eager.pool, lazy.pool) : dl;
}

std::string listing(const Program& p, const Outcome& eager) {
  std::ostringstream o;
  o << "Generator(" << p.seed << ", " << p.value_seed << "), canonical shape " << shape_str(p.canon)
    << "\n";
  for (const std::string& line : eager.trace) o << "  " << line << "\n";
  return o.str();
}

void expect_same(const Program& p, const Outcome& eager, const Outcome& lazy, const char* what) {
  const std::string diff = first_difference(eager, lazy);
  if (diff.empty()) return;
  ADD_FAILURE() << what << ": eager and recorded runs differ\n  " << diff << "\nprogram ("
                << listing(p, eager) << ")";
}

}  // namespace kiln::fuzz
