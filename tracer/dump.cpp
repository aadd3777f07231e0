#include "tracer/dump.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "runtime/config.h"
#include "runtime/logging.h"
#include "tracer/graph_dot.h"
#include "tracer/graph_printer.h"

namespace kiln::tracer {

namespace fs = std::filesystem;

namespace {

// Dumping must not throw into the user's program, even when the logger itself cannot log.
void warn(const std::string& message) noexcept {
  try {
    KILN_WARN(Tracer, "KILN_DUMP: {}", message);
  } catch (...) {
  }
}

bool write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f) f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (f) f.close();
  if (!f) {
    warn("cannot write " + path.string());
    return false;
  }
  return true;
}

}  // namespace

std::string dump_file_stem(std::string_view name) {
  std::string stem(name.empty() ? std::string_view("graph") : name);
  for (char& c : stem) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  // "." and ".." would name folders, not files.
  if (stem.find_first_not_of('.') == std::string::npos) stem = "graph" + stem;
  return stem;
}

bool dump_graph_to(const Graph& g, std::string_view name, std::string_view dir) {
  try {
    const fs::path folder{std::string(dir)};
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) {
      warn("cannot create the folder " + folder.string() + ": " + ec.message());
      return false;
    }
    const std::string stem = dump_file_stem(name);
    const bool txt = write_file(folder / (stem + ".txt"), print_graph(g));
    const bool dot = write_file(folder / (stem + ".dot"), graph_to_dot(g, name));
    return txt && dot;
  } catch (const std::exception& e) {  // bad_alloc, filesystem errors: never into user code
    warn("dumping graph " + std::string(name) + " failed: " + e.what());
    return false;
  }
}

bool dump_text(std::string_view file_name, const std::string& text) {
  try {
    const std::string dir = config().dump;
    if (dir.empty()) return false;
    const fs::path folder{dir};
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) {
      warn("cannot create the folder " + folder.string() + ": " + ec.message());
      return false;
    }
    return write_file(folder / dump_file_stem(file_name), text);
  } catch (const std::exception& e) {
    warn("dumping " + std::string(file_name) + " failed: " + e.what());
    return false;
  }
}

bool dump_graph(const Graph& g, std::string_view name) {
  std::string dir;
  try {
    dir = config().dump;
  } catch (const std::exception& e) {  // a bad KILN_* variable is reported elsewhere
    warn(std::string("no configuration: ") + e.what());
    return false;
  }
  if (dir.empty()) return false;
  return dump_graph_to(g, name, dir);
}

}  // namespace kiln::tracer
