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

DumpSettings parse_dump_settings(std::string_view spec) {
  DumpSettings s;
  if (spec.empty()) return s;
  bool any_kind = false;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item == "graph" || item == "graphs") {
      s.graph = any_kind = true;
    } else if (item == "code") {
      s.code = any_kind = true;
    } else if (item == "asm") {
      s.assembly = any_kind = true;
    } else if (item == "all") {
      s.graph = s.code = s.assembly = any_kind = true;
    } else if (!item.empty()) {
      s.dir = std::string(item);
    }
  }
  if (!any_kind) s.graph = s.code = s.assembly = true;
  if (s.dir.empty()) s.dir = "kiln-dump";
  return s;
}

DumpSettings dump_settings() noexcept {
  try {
    return parse_dump_settings(config().dump);
  } catch (const std::exception& e) {  // a bad KILN_* variable is reported elsewhere
    warn(std::string("no configuration: ") + e.what());
    return {};
  }
}

bool dump_text(DumpKind kind, std::string_view file_name, const std::string& text) {
  try {
    const DumpSettings settings = dump_settings();
    if (!settings.wants(kind)) return false;
    const std::string& dir = settings.dir;
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
  const DumpSettings settings = dump_settings();
  if (!settings.wants(DumpKind::Graph)) return false;
  return dump_graph_to(g, name, settings.dir);
}

}  // namespace kiln::tracer
