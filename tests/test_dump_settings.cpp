// KILN_DUMP: the kinds and folder it names (tracer/dump.h), and the kernel files the CPU target
// writes for `code` (loop IR, once per kernel) and `asm` (assembly, once per rendering).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/loop/loop_kernel.h"
#include "runtime/config.h"
#include "tracer/dump.h"

namespace kiln {
namespace {

using tracer::DumpKind;
using tracer::parse_dump_settings;

TEST(DumpSettings, KindsAndFolder) {
  EXPECT_TRUE(parse_dump_settings("").dir.empty()) << "empty: off";
  EXPECT_FALSE(parse_dump_settings("").wants(DumpKind::Graph));

  const auto dir_only = parse_dump_settings("/tmp/d");  // a folder alone: every kind there
  EXPECT_EQ(dir_only.dir, "/tmp/d");
  EXPECT_TRUE(dir_only.graph && dir_only.code && dir_only.assembly);

  const auto code_asm = parse_dump_settings("code,asm");  // kinds alone: the default folder
  EXPECT_EQ(code_asm.dir, "kiln-dump");
  EXPECT_FALSE(code_asm.wants(DumpKind::Graph));
  EXPECT_TRUE(code_asm.wants(DumpKind::Code));
  EXPECT_TRUE(code_asm.wants(DumpKind::Asm));

  const auto graph_in = parse_dump_settings("graph,/x/y");
  EXPECT_EQ(graph_in.dir, "/x/y");
  EXPECT_TRUE(graph_in.graph);
  EXPECT_FALSE(graph_in.code || graph_in.assembly);

  const auto all = parse_dump_settings("all,out");
  EXPECT_TRUE(all.graph && all.code && all.assembly);
  EXPECT_EQ(all.dir, "out");
}

std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  if (!std::filesystem::exists(dir)) return names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  return names;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Compiles exp(x) * c and launches it once over 40 float32 (a rendering), dumping as `spec` says.
void compile_and_launch(const std::string& spec, double c) {
  testing::ConfigOverride dump(config().dump, spec);
  jit::LoopKernel k;
  k.inputs = {DType::Float32};
  k.stores.push_back(k.binary(jit::ExprOp::Mul, k.unary(jit::ExprOp::Exp, k.load(0)),
                              k.constant(c, DType::Float32)));
  auto kernel = jit::cpu_target().compile(k);
  std::vector<float> x(40, 0.5f), y(40, 0.0f);
  jit::LaunchArgs la;
  la.sizes = {40};
  la.ptrs = {reinterpret_cast<char*>(y.data()), reinterpret_cast<char*>(x.data())};
  la.strides = {DimVector{4}, DimVector{4}};
  kernel->launch(la);
  EXPECT_FLOAT_EQ(y[39], static_cast<float>(std::exp(0.5) * c));
}

TEST(DumpSettings, CodeAndAsmFilesOfAKernel) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("kiln-dump-test-" + std::to_string(::getpid()));
  fs::remove_all(root);

  // code only: the loop IR, no assembly. (A constant no other test uses: a new kernel, rendered
  // here, not taken from the process-wide cache.)
  compile_and_launch((root / "c").string() + ",code", 1.0 + 1.0 / 1024);
  auto names = files_in(root / "c");
  ASSERT_EQ(names.size(), 1u) << "one loop IR file";
  EXPECT_TRUE(names[0].starts_with("kernel-") && names[0].ends_with(".txt")) << names[0];
  EXPECT_NE(read_all(root / "c" / names[0]).find("Exp"), std::string::npos);

  // asm only: the assembly of the rendering (its loop IR as comments), no .txt.
  compile_and_launch("asm," + (root / "a").string(), 1.0 + 2.0 / 1024);
  names = files_in(root / "a");
  ASSERT_EQ(names.size(), 1u) << "one assembly file";
  EXPECT_TRUE(names[0].ends_with(".s")) << names[0];
  const std::string text = read_all(root / "a" / names[0]);
  EXPECT_NE(text.find("# kernel inputs=[Float32]"), std::string::npos) << text.substr(0, 200);
  EXPECT_NE(text.find("mul"), std::string::npos) << "an instruction";

  // graph only: no kernel files.
  compile_and_launch((root / "g").string() + ",graph", 1.0 + 3.0 / 1024);
  EXPECT_TRUE(files_in(root / "g").empty());
  fs::remove_all(root);
}

}  // namespace
}  // namespace kiln
