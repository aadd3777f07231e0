// The tracer's graph IR: printer (golden strings), DOT export, verify(), structural hashing and
// dumps. A small test-only recorder checks that a node holds everything needed to replay an op
// call through the eager kernels with bitwise identical results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "kiln/kiln.h"
#include "runtime/config.h"
#include "runtime/dispatcher.h"
#include "tracer/dump.h"
#include "tracer/graph.h"
#include "tracer/graph_dot.h"
#include "tracer/graph_hash.h"
#include "tracer/graph_printer.h"
#include "tracer/interpreter.h"
#include "tracer/region_cache.h"

using namespace kiln;
using namespace kiln::tracer;

namespace {

ValueMeta meta(DimVector sizes, DType dt = kFloat32) {
  ValueMeta m;
  m.sizes = std::move(sizes);
  m.dtype = dt;
  return m;
}

Attrs dims_attr(DimVector dims) {
  Attrs a;
  a.dims = std::move(dims);
  return a;
}

Attrs scalar_attr(Scalar s) {
  Attrs a;
  a.scalars[0] = s;
  return a;
}

// x: [8, 16], b: [16]; y = x + b; r = sum(y, dims=[1]).
Graph add_sum_graph(DimVector xsizes = {8, 16}, DimVector bsizes = {16}) {
  Graph g;
  ValueId x = g.add_input(xsizes, kFloat32);
  ValueId b = g.add_input(bsizes, kFloat32);
  ValueId y = g.add_node(OpId::Add, Attrs{}, {x, b}, meta(xsizes));
  ValueId r = g.add_node(OpId::Sum, dims_attr({1}), {y}, meta({xsizes[0]}));
  g.set_outputs({r});
  return g;
}

// A body of one op over a [n] Float32 input: op(x) with `attrs`.
Graph one_op_body(OpId op, int64_t n = 4, const Attrs& attrs = {}) {
  Graph body;
  ValueId a = body.add_input({n}, kFloat32);
  body.set_outputs({body.add_node(op, attrs, {a}, meta({n}))});
  return body;
}

// op(x) over a [4] Float32 input, its node owning `bodies` (any op stands in for a higher-order
// one: the IR only cares that a node owns subgraphs).
Graph owning(Subgraphs bodies, OpId op = OpId::Relu) {
  Graph g;
  ValueId x = g.add_input({4}, kFloat32);
  g.set_outputs({g.add_node(op, Attrs{}, {x}, meta({4}), std::move(bodies))});
  return g;
}

void expect_verify_error(const Graph& g, const std::string& fragment) {
  try {
    g.verify();
    ADD_FAILURE() << "verify() accepted a bad graph; expected an error containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << fragment;
  }
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A fresh, empty folder under the system temp dir, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("kiln-graph-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Printer

TEST(GraphPrinter, AddSum) {
  EXPECT_EQ(print_graph(add_sum_graph()),
            "graph(%0: Float32[8, 16], %1: Float32[16]) {\n"
            "  %2: Float32[8, 16] = add(%0, %1)\n"
            "  %3: Float32[8] = sum(%2) {dims=[1]}\n"
            "  return (%3)\n"
            "}\n");
}

TEST(GraphPrinter, EmptyGraphAndMultipleOutputs) {
  Graph g;
  EXPECT_EQ(print_graph(g), "graph() {\n  return ()\n}\n");
  ValueId x = g.add_input({}, kInt64);
  ValueId y = g.add_node(OpId::Neg, Attrs{}, {x}, meta({}, kInt64));
  g.set_outputs({y, x});
  EXPECT_EQ(print_graph(g),
            "graph(%0: Int64[]) {\n"
            "  %1: Int64[] = neg(%0)\n"
            "  return (%1, %0)\n"
            "}\n");
}

TEST(GraphPrinter, OpNamesAreSnakeCase) {
  EXPECT_EQ(op_display_name(OpId::Add), "add");
  EXPECT_EQ(op_display_name(OpId::LogSoftmax), "log_softmax");
  EXPECT_EQ(op_display_name(OpId::GeluTanh), "gelu_tanh");
  EXPECT_EQ(op_display_name(OpId::IndexSelect), "index_select");
}

TEST(GraphPrinter, ScalarKinds) {
  EXPECT_EQ(format_scalar(Scalar(2)), "2");
  EXPECT_EQ(format_scalar(Scalar(-7)), "-7");
  EXPECT_EQ(format_scalar(Scalar(2.0)), "2.0");
  EXPECT_EQ(format_scalar(Scalar(0.5)), "0.5");
  EXPECT_EQ(format_scalar(Scalar(-0.0)), "-0.0");
  EXPECT_EQ(format_scalar(Scalar(1e20)), "1e+20");
  EXPECT_EQ(format_scalar(Scalar(0.1)), "0.1");  // shortest round-trip, not 0.1000000000000000055
  EXPECT_EQ(format_scalar(Scalar(true)), "true");
  EXPECT_EQ(format_scalar(Scalar(false)), "false");
  EXPECT_EQ(format_scalar(Scalar(std::numeric_limits<double>::infinity())), "inf");
  EXPECT_EQ(format_scalar(Scalar(-std::numeric_limits<double>::infinity())), "-inf");
  EXPECT_EQ(format_scalar(Scalar(std::numeric_limits<double>::quiet_NaN())), "nan");
}

TEST(GraphPrinter, AttrsOnlyNonDefaultFields) {
  EXPECT_EQ(format_attrs(Attrs{}), "");
  EXPECT_EQ(format_attrs(scalar_attr(2)), "{scalars=[2]}");
  EXPECT_EQ(format_attrs(scalar_attr(2.0)), "{scalars=[2.0]}");
  EXPECT_EQ(format_attrs(scalar_attr(true)), "{scalars=[true]}");
  // A float 0.0 differs from the default (integer 0) scalar, so it is printed.
  EXPECT_EQ(format_attrs(scalar_attr(0.0)), "{scalars=[0.0]}");
  Attrs a;
  a.scalars[1] = Scalar(-1.5);
  a.ints[1] = 1;
  EXPECT_EQ(format_attrs(a), "{scalars=[0, -1.5], ints=[0, 1]}");
  Attrs f;
  f.dims = {2, 3};
  f.ints[0] = 4;
  f.dtype = kInt64;
  f.device = Device::cuda(1);
  EXPECT_EQ(format_attrs(f), "{dims=[2, 3], ints=[4], dtype=Int64, device=cuda:1}");
}

TEST(GraphPrinter, TypesWithLayoutAndDevice) {
  EXPECT_EQ(format_type(meta({8, 16})), "Float32[8, 16]");
  EXPECT_EQ(format_type(meta({}, kBool)), "Bool[]");
  ValueMeta t = meta({16, 8});
  t.strides = {1, 16};
  EXPECT_EQ(format_type(t), "Float32[16, 8]{strides=[1, 16]}");
  ValueMeta s = meta({4, 16}, kFloat64);
  s.strides = {16, 1};
  s.offset = 32;
  EXPECT_EQ(format_type(s), "Float64[4, 16]{offset=32}");
  s.strides = {32, 2};
  EXPECT_EQ(format_type(s), "Float64[4, 16]{strides=[32, 2], offset=32}");
  ValueMeta c = meta({8});
  c.device = Device::cuda(0);
  EXPECT_EQ(format_type(c), "Float32[8]@cuda:0");

  Graph g;
  ValueId x = g.add_input(t);
  ValueMeta view = meta({8, 16});
  view.strides = {16, 1};
  ValueId y = g.add_node(OpId::Permute, dims_attr({1, 0}), {x}, view);
  ValueId z = g.add_node(OpId::Mul, scalar_attr(0.5), {y}, meta({8, 16}));
  g.set_outputs({z});
  EXPECT_EQ(print_graph(g),
            "graph(%0: Float32[16, 8]{strides=[1, 16]}) {\n"
            "  %1: Float32[8, 16] = permute(%0) {dims=[1, 0]}\n"
            "  %2: Float32[8, 16] = mul(%1) {scalars=[0.5]}\n"
            "  return (%2)\n"
            "}\n");
}

TEST(GraphPrinter, NestedSubgraphsAreIndented) {
  Graph then_branch;
  ValueId a = then_branch.add_input({4}, kFloat32);
  then_branch.set_outputs({then_branch.add_node(OpId::Exp, Attrs{}, {a}, meta({4}))});
  Graph else_branch;
  ValueId b = else_branch.add_input({4}, kFloat32);
  else_branch.set_outputs({b});

  Graph g;
  ValueId p = g.add_input({}, kBool);
  ValueId x = g.add_input({4}, kFloat32);
  // Any op id stands in for the future cond: the IR only cares that a node owns subgraphs.
  ValueId r = g.add_node(OpId::Where, Attrs{}, {p, x}, meta({4}), {then_branch, else_branch});
  g.set_outputs({r});
  EXPECT_NO_THROW(g.verify());
  EXPECT_EQ(print_graph(g),
            "graph(%0: Bool[], %1: Float32[4]) {\n"
            "  %2: Float32[4] = where(%0, %1)\n"
            "    subgraph 0: graph(%0: Float32[4]) {\n"
            "      %1: Float32[4] = exp(%0)\n"
            "      return (%1)\n"
            "    }\n"
            "    subgraph 1: graph(%0: Float32[4]) {\n"
            "      return (%0)\n"
            "    }\n"
            "  return (%2)\n"
            "}\n");
}

// A copy of a graph shares its nodes' bodies (Subgraphs): no body is copied node by node, and
// appending a body to one copy's node leaves the other copy's list as it was.
TEST(GraphSubgraphs, CopiesShareBodiesAndAppendCopiesTheList) {
  const Graph body = one_op_body(OpId::Exp);
  Graph g = owning({body}, OpId::Where);
  EXPECT_TRUE(Graph{}.nodes.empty());
  EXPECT_TRUE(Node{}.subgraphs.empty());
  EXPECT_EQ(Node{}.subgraphs.size(), 0u);
  EXPECT_EQ(Node{}.subgraphs.begin(), Node{}.subgraphs.end());

  const Graph copy = g;
  ASSERT_EQ(copy.nodes[0].subgraphs.size(), 1u);
  EXPECT_EQ(&copy.nodes[0].subgraphs[0], &g.nodes[0].subgraphs[0]);  // shared, not copied
  EXPECT_EQ(print_graph(copy), print_graph(g));

  Graph grown = g;
  grown.nodes[0].subgraphs.push_back(body);
  EXPECT_EQ(grown.nodes[0].subgraphs.size(), 2u);
  EXPECT_EQ(g.nodes[0].subgraphs.size(), 1u);
  EXPECT_EQ(copy.nodes[0].subgraphs.size(), 1u);
  EXPECT_NE(&grown.nodes[0].subgraphs[0], &g.nodes[0].subgraphs[0]);
  int bodies = 0;
  for (const Graph& b : grown.nodes[0].subgraphs) bodies += static_cast<int>(b.nodes.size());
  EXPECT_EQ(bodies, 2);
}

// Interpreter plans of bodies follow the sharing: nodes that share one list of bodies (a region
// called many times) share one list of plans, and an equal but separate list gets its own.
TEST(GraphSubgraphs, SharedBodiesShareTheirInterpreterPlans) {
  const Subgraphs shared{one_op_body(OpId::Exp), one_op_body(OpId::Neg)};
  Graph g;
  ValueId v = g.add_input({4}, kFloat32);
  for (int i = 0; i < 3; ++i) v = g.add_node(OpId::Relu, Attrs{}, {v}, meta({4}), shared);
  v = g.add_node(OpId::Relu, Attrs{}, {v}, meta({4}));  // no bodies
  v = g.add_node(OpId::Relu, Attrs{}, {v}, meta({4}),
                 Subgraphs{one_op_body(OpId::Exp), one_op_body(OpId::Neg)});  // equal, separate
  g.set_outputs({v});
  const InterpreterPlan plan = plan_interpreter(g);
  ASSERT_EQ(plan.bodies.size(), 5u);
  ASSERT_TRUE(plan.bodies[0]);
  EXPECT_EQ(plan.bodies[0]->size(), 2u);
  EXPECT_EQ(plan.bodies[1], plan.bodies[0]);
  EXPECT_EQ(plan.bodies[2], plan.bodies[0]);
  EXPECT_FALSE(plan.bodies[3]);
  EXPECT_TRUE(body_plans(plan.bodies, 3).empty());
  ASSERT_TRUE(plan.bodies[4]);
  EXPECT_NE(plan.bodies[4], plan.bodies[0]);
  EXPECT_EQ(body_plans(plan.bodies, 4).size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// DOT

TEST(GraphDot, ContainsInputsOpsEdgesAndReturn) {
  const std::string dot = graph_to_dot(add_sum_graph(), "my \"graph\"");
  EXPECT_EQ(dot.rfind("digraph \"my \\\"graph\\\"\" {\n", 0), 0u) << dot;
  EXPECT_NE(dot.find("v0 [shape=ellipse, label=\"%0\\nFloat32[8, 16]\"];"), std::string::npos)
      << dot;
  EXPECT_NE(dot.find("v1 [shape=ellipse, label=\"%1\\nFloat32[16]\"];"), std::string::npos);
  EXPECT_NE(dot.find("v2 [shape=box, label=\"add\\n%2: Float32[8, 16]\"];"), std::string::npos);
  EXPECT_NE(dot.find("v3 [shape=box, label=\"sum\\n%3: Float32[8]\\n{dims=[1]}\"];"),
            std::string::npos)
      << dot;
  // Argument positions label the edges of a multi-input op.
  EXPECT_NE(dot.find("v0 -> v2 [label=\"0\"];"), std::string::npos);
  EXPECT_NE(dot.find("v1 -> v2 [label=\"1\"];"), std::string::npos);
  EXPECT_NE(dot.find("v2 -> v3;"), std::string::npos);
  EXPECT_NE(dot.find("v3 -> return;"), std::string::npos);
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

TEST(GraphDot, SubgraphsAreClustersWithTheirOwnNames) {
  const std::string dot = graph_to_dot(owning({one_op_body(OpId::Exp)}));
  EXPECT_NE(dot.find("subgraph cluster_n1s0_ {"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"relu subgraph 0\";"), std::string::npos);
  // The body's %0 and %1 do not collide with the outer graph's.
  EXPECT_NE(dot.find("n1s0_v0 [shape=ellipse"), std::string::npos);
  EXPECT_NE(dot.find("n1s0_v1 [shape=box, label=\"exp\\n%1: Float32[4]\"];"), std::string::npos);
  EXPECT_NE(dot.find("n1s0_v0 -> n1s0_v1;"), std::string::npos);
  EXPECT_NE(dot.find("v1 -> n1s0_return [style=dashed"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// verify()

TEST(GraphVerify, AcceptsWellFormedGraphs) {
  EXPECT_NO_THROW(add_sum_graph().verify());
  EXPECT_NO_THROW(Graph{}.verify());
}

TEST(GraphVerify, UseBeforeDefinition) {
  Graph g = add_sum_graph();
  std::swap(g.nodes[0], g.nodes[1]);  // sum now reads add's output before add runs
  expect_verify_error(g,
                      "node 0 (sum) input 0 is %2, which is used before its definition (node 1)");
}

TEST(GraphVerify, BadIds) {
  Graph g = add_sum_graph();
  g.nodes[0].inputs[1] = 99;
  expect_verify_error(g, "node 0 (add) input 1 is %99, which is not a valid id (the graph has 4");
  g = add_sum_graph();
  g.nodes[1].inputs[0] = -3;
  expect_verify_error(g, "node 1 (sum) input 0 is %-3, which is not a valid id");
  g = add_sum_graph();
  g.nodes[1].output = 17;
  expect_verify_error(g, "node 1 defines %17, which is not a valid id");
}

TEST(GraphVerify, UndefinedAndRedefinedValues) {
  Graph g = add_sum_graph();
  g.nodes.pop_back();  // %3 is still the output
  expect_verify_error(g, "output 0 is %3, which is not defined in the graph");
  g = add_sum_graph();
  g.inputs.erase(g.inputs.begin());  // %0 is gone but add still reads it
  expect_verify_error(g, "node 0 (add) input 0 is %0, which is never defined");
  g = add_sum_graph();
  g.nodes[1].output = 2;
  expect_verify_error(g, "node 1 redefines %2 (already defined at node 0)");
  g = add_sum_graph();
  g.nodes[0].output = 1;
  expect_verify_error(g, "node 0 redefines %1 (already defined at input 1)");
}

TEST(GraphVerify, Metadata) {
  Graph g = add_sum_graph();
  g.nodes[0].meta.strides = {1};
  expect_verify_error(g, "node 0 (add) output (%2) has 2 sizes but 1 strides");
  g = add_sum_graph();
  g.inputs[1].meta.sizes = {-1};
  expect_verify_error(g, "input 1 (%1) has a negative size (-1)");
  g = add_sum_graph();
  g.inputs[0].meta.strides.clear();
  expect_verify_error(g, "input 0 (%0) must state its strides");
  g = add_sum_graph();
  g.nodes[0].op = OpId::kCount;
  expect_verify_error(g, "node 0 has an invalid op id");
}

TEST(GraphVerify, ErrorsInsideSubgraphsSayWhere) {
  Graph body;
  ValueId a = body.add_input({4}, kFloat32);
  body.add_node(OpId::Exp, Attrs{}, {a}, meta({4}));
  body.set_outputs({5});
  Graph g;
  ValueId x = g.add_input({4}, kFloat32);
  g.set_outputs({g.add_node(OpId::Relu, Attrs{}, {x}, meta({4}), {body})});
  expect_verify_error(g, "graph verify (in subgraph 0 of node 0 (relu)): output 0 is %5");
}

TEST(GraphVerify, MetaLookup) {
  Graph g = add_sum_graph();
  EXPECT_EQ(g.meta(1).sizes, (DimVector{16}));
  EXPECT_EQ(g.meta(3).sizes, (DimVector{8}));
  EXPECT_EQ(g.meta(0).strides, (DimVector{16, 1}));  // add_input states the row-major strides
  EXPECT_THROW(g.meta(4), Error);
}

// ---------------------------------------------------------------------------------------------
// Hashing

TEST(GraphHash, ContiguityClass) {
  EXPECT_EQ(contiguity_class({2, 3}, {3, 1}), Contiguity::Contiguous);
  EXPECT_EQ(contiguity_class({2, 3}, {}), Contiguity::Contiguous);
  EXPECT_EQ(contiguity_class({}, {}), Contiguity::Contiguous);
  EXPECT_EQ(contiguity_class({2, 1, 3}, {3, 99, 1}), Contiguity::Contiguous);  // size-1 dims
  EXPECT_EQ(contiguity_class({0, 3}, {7, 5}), Contiguity::Contiguous);         // no elements
  EXPECT_EQ(contiguity_class({3, 2}, {1, 3}), Contiguity::TransposedLastTwo);
  EXPECT_EQ(contiguity_class({4, 3, 2}, {6, 1, 3}), Contiguity::TransposedLastTwo);
  EXPECT_EQ(contiguity_class({2, 3}, {0, 1}), Contiguity::Other);  // broadcast
  EXPECT_EQ(contiguity_class({4}, {2}), Contiguity::Other);        // a strided slice
  EXPECT_EQ(contiguity_class({2, 3, 4}, {1, 8, 2}), Contiguity::Other);
  EXPECT_EQ(contiguity_class({2, 3}, {1}), Contiguity::Other);  // malformed: rank mismatch
  EXPECT_STREQ(contiguity_name(Contiguity::TransposedLastTwo), "transposed");
}

TEST(GraphHash, SameGraphBuiltTwiceIsEqual) {
  for (HashMode mode : {HashMode::Exact, HashMode::Shapeless}) {
    EXPECT_EQ(graph_hash(add_sum_graph(), mode), graph_hash(add_sum_graph(), mode));
    EXPECT_TRUE(structurally_equal(add_sum_graph(), add_sum_graph(), mode));
  }
  EXPECT_NE(graph_hash(add_sum_graph(), HashMode::Exact),
            graph_hash(add_sum_graph(), HashMode::Shapeless));
}

// RegionCache::lookup_or_adopt: a miss makes a region that takes the graph (the caller's is left
// empty and graph_to_run gives the region's, equal to what the caller had); a hit leaves the
// caller's graph as it was and graph_to_run gives it back (its scalars are the recording's).
TEST(RegionCacheAdopt, AMissTakesTheGraphAHitLeavesIt) {
  RegionCache::instance().clear();
  const std::vector<int32_t> aliasing{-1, -1};
  Graph first = add_sum_graph({8, 16}, {16});
  const CacheLookup made = RegionCache::instance().lookup_or_adopt(first, aliasing);
  ASSERT_NE(made.region, nullptr);
  EXPECT_FALSE(made.hit);
  EXPECT_TRUE(first.nodes.empty() && first.inputs.empty()) << "taken, not copied";
  EXPECT_EQ(&graph_to_run(made, first), &made.region->graph);
  EXPECT_TRUE(
      structurally_equal(made.region->graph, add_sum_graph({8, 16}, {16}), HashMode::Exact));
  Graph again = add_sum_graph({8, 16}, {16});
  const CacheLookup found = RegionCache::instance().lookup_or_adopt(again, aliasing);
  EXPECT_TRUE(found.hit);
  EXPECT_EQ(found.region, made.region);
  EXPECT_EQ(again.nodes.size(), 2u) << "a hit keeps the caller's graph";
  EXPECT_EQ(&graph_to_run(found, again), &again);
  RegionCache::instance().clear();
}

TEST(GraphHash, ValueNumberingDoesNotMatter) {
  // Same structure with a gap in the ids (an input removed by a pass): edges are by position.
  Graph g;
  ValueId x = g.add_input({8, 16}, kFloat32);
  g.add_input({3}, kInt64);
  ValueId b = g.add_input({16}, kFloat32);
  g.inputs.erase(g.inputs.begin() + 1);
  ValueId y = g.add_node(OpId::Add, Attrs{}, {x, b}, meta({8, 16}));
  g.set_outputs({g.add_node(OpId::Sum, dims_attr({1}), {y}, meta({8}))});
  ASSERT_NO_THROW(g.verify());
  EXPECT_EQ(graph_hash(g), graph_hash(add_sum_graph()));
  EXPECT_TRUE(structurally_equal(g, add_sum_graph()));
}

TEST(GraphHash, DifferencesChangeTheKey) {
  const Graph base = add_sum_graph();
  std::vector<std::pair<std::string, Graph>> variants;
  auto variant = [&](std::string what, auto edit) {
    Graph g = base;
    edit(g);
    variants.emplace_back(std::move(what), std::move(g));
  };
  variant("op", [](Graph& g) { g.nodes[0].op = OpId::Sub; });
  variant("edge order", [](Graph& g) { std::swap(g.nodes[0].inputs[0], g.nodes[0].inputs[1]); });
  variant("input dtype", [](Graph& g) { g.inputs[1].meta.dtype = kFloat64; });
  variant("input device", [](Graph& g) { g.inputs[1].meta.device = Device::cuda(0); });
  variant("output dtype", [](Graph& g) { g.nodes[1].meta.dtype = kFloat64; });
  variant("dims", [](Graph& g) { g.nodes[1].attrs.dims = {-1}; });
  variant("int attr", [](Graph& g) { g.nodes[1].attrs.ints[0] = 1; });
  variant("attr dtype", [](Graph& g) { g.nodes[1].attrs.dtype = kInt64; });
  variant("scalar 2", [](Graph& g) { g.nodes[0].attrs.scalars[0] = Scalar(2); });
  variant("scalar 2.0", [](Graph& g) { g.nodes[0].attrs.scalars[0] = Scalar(2.0); });
  variant("scalar true", [](Graph& g) { g.nodes[0].attrs.scalars[0] = Scalar(true); });
  variant("scalar 0.0", [](Graph& g) { g.nodes[0].attrs.scalars[0] = Scalar(0.0); });
  variant("scalar -0.0", [](Graph& g) { g.nodes[0].attrs.scalars[0] = Scalar(-0.0); });
  variant("scalar nan", [](Graph& g) {
    g.nodes[0].attrs.scalars[0] = Scalar(std::numeric_limits<double>::quiet_NaN());
  });
  variant("scalar other nan", [](Graph& g) {
    double nan2;
    const uint64_t bits = 0x7ff8000000000123ull;
    std::memcpy(&nan2, &bits, sizeof nan2);
    g.nodes[0].attrs.scalars[0] = Scalar(nan2);
  });
  variant("outputs", [](Graph& g) { g.set_outputs({3, 2}); });
  variant("extra node", [](Graph& g) { g.add_node(OpId::Exp, Attrs{}, {3}, meta({8})); });
  variant("transposed input", [](Graph& g) { g.inputs[0].meta.strides = {1, 8}; });
  variant("subgraph", [](Graph& g) { g.nodes[0].subgraphs.push_back(Graph{}); });

  // Every variant differs from the base and from every other variant, in both modes.
  for (HashMode mode : {HashMode::Exact, HashMode::Shapeless}) {
    for (size_t i = 0; i < variants.size(); ++i) {
      EXPECT_NE(graph_hash(variants[i].second, mode), graph_hash(base, mode)) << variants[i].first;
      EXPECT_FALSE(structurally_equal(variants[i].second, base, mode)) << variants[i].first;
      for (size_t j = 0; j < i; ++j) {
        EXPECT_NE(graph_hash(variants[i].second, mode), graph_hash(variants[j].second, mode))
            << variants[i].first << " vs " << variants[j].first;
      }
    }
  }
  // The same NaN bit pattern twice is the same key (even though NaN != NaN as a number).
  Graph n1 = base, n2 = base;
  n1.nodes[0].attrs.scalars[0] = Scalar(std::numeric_limits<double>::quiet_NaN());
  n2.nodes[0].attrs.scalars[0] = Scalar(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(graph_hash(n1), graph_hash(n2));
  EXPECT_TRUE(structurally_equal(n1, n2));
}

TEST(GraphHash, ShapelessIgnoresSizesOnly) {
  const Graph base = add_sum_graph({8, 16}, {16});
  const Graph bigger = add_sum_graph({32, 64}, {64});
  EXPECT_NE(graph_hash(base, HashMode::Exact), graph_hash(bigger, HashMode::Exact));
  EXPECT_FALSE(structurally_equal(base, bigger, HashMode::Exact));
  EXPECT_EQ(graph_hash(base, HashMode::Shapeless), graph_hash(bigger, HashMode::Shapeless));
  EXPECT_TRUE(structurally_equal(base, bigger, HashMode::Shapeless));

  // A dim that becomes 1 changes broadcasting: a different key.
  const Graph ones = add_sum_graph({1, 16}, {16});
  EXPECT_NE(graph_hash(base, HashMode::Shapeless), graph_hash(ones, HashMode::Shapeless));
  EXPECT_FALSE(structurally_equal(base, ones, HashMode::Shapeless));
  const Graph bcast = add_sum_graph({8, 16}, {1});
  EXPECT_NE(graph_hash(base, HashMode::Shapeless), graph_hash(bcast, HashMode::Shapeless));

  // Rank is part of the key.
  Graph rank3 = add_sum_graph({8, 16, 4}, {4});
  EXPECT_NE(graph_hash(base, HashMode::Shapeless), graph_hash(rank3, HashMode::Shapeless));

  // So is the contiguity class of an input, but not its exact strides or storage offset.
  Graph t = add_sum_graph({16, 8}, {8});
  t.inputs[0].meta.strides = {1, 16};
  Graph t2 = add_sum_graph({32, 8}, {8});
  t2.inputs[0].meta.strides = {1, 32};
  t2.inputs[0].meta.offset = 5;
  EXPECT_EQ(graph_hash(t, HashMode::Shapeless), graph_hash(t2, HashMode::Shapeless));
  EXPECT_TRUE(structurally_equal(t, t2, HashMode::Shapeless));
  EXPECT_NE(graph_hash(t, HashMode::Shapeless),
            graph_hash(add_sum_graph({16, 8}, {8}), HashMode::Shapeless));
  // The input's storage offset is data, not structure, in exact mode too.
  Graph o = base;
  o.inputs[0].meta.offset = 64;
  EXPECT_EQ(graph_hash(o), graph_hash(base));

  // View offsets count relative to their base: the same slice of an input stored at another
  // offset is the same graph; a slice starting elsewhere is not.
  auto slice_graph = [](int64_t input_offset, int64_t slice_start) {
    Graph g;
    ValueMeta in = meta({8, 16});
    in.offset = input_offset;
    ValueId x = g.add_input(in);
    ValueMeta v = meta({4, 16});
    v.strides = {16, 1};
    v.offset = input_offset + slice_start * 16;
    ValueId s = g.add_node(OpId::Slice, Attrs{}, {x}, v);
    ValueMeta v2 = meta({4, 8});
    v2.strides = {16, 1};
    v2.offset = v.offset + 8;
    g.set_outputs({g.add_node(OpId::Slice, Attrs{}, {s}, v2)});
    return g;
  };
  EXPECT_EQ(graph_hash(slice_graph(0, 2)), graph_hash(slice_graph(100, 2)));
  EXPECT_TRUE(structurally_equal(slice_graph(0, 2), slice_graph(100, 2)));
  EXPECT_NE(graph_hash(slice_graph(0, 2)), graph_hash(slice_graph(0, 3)));
  EXPECT_FALSE(structurally_equal(slice_graph(0, 2), slice_graph(0, 3)));
  EXPECT_EQ(graph_hash(slice_graph(0, 2), HashMode::Shapeless),
            graph_hash(slice_graph(0, 3), HashMode::Shapeless));

  // Sizes baked into attributes stay in the key.
  Graph d1 = add_sum_graph(), d2 = add_sum_graph();
  d2.nodes[1].attrs.dims = {0};
  EXPECT_NE(graph_hash(d1, HashMode::Shapeless), graph_hash(d2, HashMode::Shapeless));
}

TEST(GraphHash, SubgraphsAreCompared) {
  auto with_body = [](OpId body_op) { return owning({one_op_body(body_op)}); };
  EXPECT_EQ(graph_hash(with_body(OpId::Exp)), graph_hash(with_body(OpId::Exp)));
  EXPECT_TRUE(structurally_equal(with_body(OpId::Exp), with_body(OpId::Exp)));
  EXPECT_NE(graph_hash(with_body(OpId::Exp)), graph_hash(with_body(OpId::Log)));
  EXPECT_FALSE(structurally_equal(with_body(OpId::Exp), with_body(OpId::Log)));
}

// A body shared by several nodes (the calls of one region) is one interned id, computed once:
// the encoding is the one of the same graph with a body of its own per node, and a node whose
// body differs still changes it, in every mode.
TEST(GraphHash, SharedBodiesEncodeAsSeparateOnes) {
  auto body = [](OpId op, int64_t n) { return one_op_body(op, n); };
  // Three calls; `bodies[k]` is call k's list (lists shared between calls where they are equal).
  auto calls = [](const std::vector<Subgraphs>& bodies) {
    Graph g;
    ValueId x = g.add_input({4}, kFloat32);
    for (const Subgraphs& b : bodies) x = g.add_node(OpId::Relu, Attrs{}, {x}, meta({4}), b);
    g.set_outputs({x});
    return g;
  };
  const Subgraphs shared{body(OpId::Exp, 4), body(OpId::Log, 8)};
  const Graph one_list = calls({shared, shared, shared});
  const Graph own_lists = calls({Subgraphs{body(OpId::Exp, 4), body(OpId::Log, 8)},
                                 Subgraphs{body(OpId::Exp, 4), body(OpId::Log, 8)},
                                 Subgraphs{body(OpId::Exp, 4), body(OpId::Log, 8)}});
  const Graph last_differs =
      calls({shared, shared, Subgraphs{body(OpId::Exp, 4), body(OpId::Log, 16)}});
  for (HashMode mode : {HashMode::Exact, HashMode::Shapeless, HashMode::Skeleton}) {
    const std::vector<uint64_t> words = encode_graph(one_list, mode, ScalarKey::Values);
    EXPECT_EQ(words, encode_graph(own_lists, mode, ScalarKey::Values));
    EXPECT_TRUE(structurally_equal(one_list, own_lists, mode));
    EXPECT_EQ(graph_hash(one_list, mode), graph_hash(own_lists, mode));
    if (mode != HashMode::Exact) continue;  // sizes 8 and 16 are the same rank elsewhere
    EXPECT_NE(words, encode_graph(last_differs, mode, ScalarKey::Values));
    EXPECT_FALSE(structurally_equal(one_list, last_differs, mode));
    EXPECT_NE(graph_hash(one_list, mode), graph_hash(last_differs, mode));
  }
}

// The table of interned bodies starts over when it is full: ids from before are stale, so equal
// bodies still encode equally (a body encoded before and one encoded after alike), different
// bodies still differently, and a graph encoded before the restart encodes as it did.
TEST(GraphHash, InternedBodiesStartOverWhenTheTableIsFull) {
  auto with_body = [](int64_t n, double c) {
    Attrs at;
    at.scalars[0] = Scalar(c);
    return owning({one_op_body(OpId::Mul, n, at)});
  };
  const size_t before = set_body_table_limit(200);  // a few bodies' words
  const Graph first = with_body(4, 0.5);
  const std::vector<uint64_t> first_words = encode_graph(first, HashMode::Exact, ScalarKey::Values);
  for (int k = 0; k < 40; ++k) {  // distinct bodies: the table starts over several times
    const Graph g = with_body(4, 1.0 + k);
    const std::vector<uint64_t> w = encode_graph(g, HashMode::Exact, ScalarKey::Values);
    EXPECT_EQ(w, encode_graph(with_body(4, 1.0 + k), HashMode::Exact, ScalarKey::Values)) << k;
    EXPECT_NE(w, first_words) << k;
    EXPECT_TRUE(structurally_equal(g, with_body(4, 1.0 + k)));
    EXPECT_FALSE(structurally_equal(g, with_body(4, 2.0 + k)));
  }
  // The first graph's body was interned before the restarts: encoded again, it is interned anew
  // and matches an equal body made now.
  EXPECT_EQ(encode_graph(first, HashMode::Exact, ScalarKey::Values),
            encode_graph(with_body(4, 0.5), HashMode::Exact, ScalarKey::Values));
  EXPECT_TRUE(structurally_equal(first, with_body(4, 0.5)));
  EXPECT_FALSE(structurally_equal(first, with_body(4, 0.25)));
  set_body_table_limit(before);
}

// ---------------------------------------------------------------------------------------------
// Dumps

TEST(GraphDump, WritesTextAndDot) {
  TempDir tmp;
  const auto dir = tmp.path / "nested" / "dumps";  // created on demand
  const Graph g = add_sum_graph();
  ASSERT_TRUE(dump_graph_to(g, "segment_1", dir.string()));
  EXPECT_EQ(read_file(dir / "segment_1.txt"), print_graph(g));
  EXPECT_EQ(read_file(dir / "segment_1.dot"), graph_to_dot(g, "segment_1"));
}

TEST(GraphDump, FollowsConfig) {
  TempDir tmp;
  const std::string saved = config().dump;
  config().dump.clear();
  EXPECT_FALSE(dump_graph(add_sum_graph(), "off"));
  EXPECT_FALSE(std::filesystem::exists(tmp.path));
  config().dump = tmp.path.string();
  const bool written = dump_graph(add_sum_graph(), "region a/b");
  config().dump = saved;
  EXPECT_TRUE(written);
  EXPECT_TRUE(std::filesystem::exists(tmp.path / "region_a_b.txt"));
  EXPECT_TRUE(std::filesystem::exists(tmp.path / "region_a_b.dot"));
}

TEST(GraphDump, FailuresAreWarningsNotExceptions) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.path);
  const auto file = tmp.path / "a_file";
  std::ofstream(file) << "not a folder";
  bool ok = true;
  EXPECT_NO_THROW(ok = dump_graph_to(add_sum_graph(), "g", (file / "sub").string()));
  EXPECT_FALSE(ok);
  // A folder where the .txt file should go: the file cannot be opened.
  std::filesystem::create_directories(tmp.path / "g.txt");
  EXPECT_NO_THROW(ok = dump_graph_to(add_sum_graph(), "g", tmp.path.string()));
  EXPECT_FALSE(ok);
}

TEST(GraphDump, FileStems) {
  EXPECT_EQ(dump_file_stem("region_3.fwd-bwd"), "region_3.fwd-bwd");
  EXPECT_EQ(dump_file_stem("a/b c"), "a_b_c");
  EXPECT_EQ(dump_file_stem(".."), "graph..");
  EXPECT_EQ(dump_file_stem(""), "graph");
}

// ---------------------------------------------------------------------------------------------
// A node is one dispatched call: record real ops through a ModeHandler, then replay the graph
// with the eager kernels and compare bitwise (what the recorder and interpreter will rely on).

namespace {

class TestRecorder : public ModeHandler {
 public:
  Graph graph;
  std::map<const TensorImpl*, ValueId> ids;
  std::vector<Tensor> keep;  // keeps recorded tensors alive so their impl pointers stay unique

  ValueId input(const Tensor& t) {
    ValueMeta m;
    m.sizes = t.impl()->sizes();
    m.strides = t.impl()->strides();
    m.offset = t.impl()->offset();
    m.dtype = t.dtype();
    m.device = t.device();
    ValueId id = graph.add_input(m);
    ids[t.impl()] = id;
    keep.push_back(t);
    return id;
  }
  Tensor handle(const OpDef& def, const OpCall& call, OutputMeta& meta) override {
    SmallVector<ValueId, 4> in;
    for (const Tensor& t : call.inputs) in.push_back(ids.at(t.impl()));
    ValueId id =
        graph.add_node(call.op, call.attrs, std::span<const ValueId>(in.begin(), in.size()), meta);
    Tensor out = run_eager(def, call, meta);
    ids[out.impl()] = id;
    keep.push_back(out);
    return out;
  }
  void handle_into(const OpDef&, const OpCall& call, OutputMeta&, Tensor&) override {
    fail("{}: in-place ops are not recorded by this test", op_name(call.op));
  }
};

std::vector<Tensor> replay(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> env(static_cast<size_t>(g.num_values()));
  for (size_t i = 0; i < g.inputs.size(); ++i) env[g.inputs[i].id] = inputs[i];
  for (const Node& n : g.nodes) {
    std::vector<Tensor> args;
    for (ValueId v : n.inputs) args.push_back(env[v]);
    env[n.output] = run_eager(op_def(n.op), OpCall{n.op, args, n.attrs}, n.meta);
  }
  std::vector<Tensor> outs;
  for (ValueId v : g.outputs) outs.push_back(env[v]);
  return outs;
}

template <class T>
bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  std::vector<T> va = a.contiguous().to_vector<T>(), vb = b.contiguous().to_vector<T>();
  return std::memcmp(va.data(), vb.data(), va.size() * sizeof(T)) == 0;
}

}  // namespace

TEST(GraphRecord, ReplayOfRecordedOpsIsBitwiseEager) {
  Tensor x = randn({8, 16});
  Tensor b = randn({16});
  TestRecorder rec;
  rec.input(x);
  rec.input(b);
  set_current_mode(&rec);
  Tensor y, r, w;
  try {
    y = add(x, b);
    r = sum(y.t().exp(), {0});
    w = mul(y, 2);
  } catch (...) {
    set_current_mode(nullptr);
    throw;
  }
  set_current_mode(nullptr);
  rec.graph.set_outputs({rec.ids.at(r.impl()), rec.ids.at(w.impl())});
  ASSERT_NO_THROW(rec.graph.verify());
  ASSERT_EQ(rec.graph.nodes.size(), 5u) << print_graph(rec.graph);  // add, t, exp, sum, mul
  // The text form of a real recording (attrs as the ops fill them in, the view's geometry).
  const std::string text = print_graph(rec.graph);
  EXPECT_EQ(text.rfind("graph(%0: Float32[8, 16], %1: Float32[16]) {\n"
                       "  %2: Float32[8, 16] = add(%0, %1)\n"
                       "  %3: Float32[16, 8]{strides=[1, 16]} = permute(%2) {dims=[1, 0]}\n"
                       "  %4: Float32[16, 8] = exp(%3)\n"
                       "  %5: Float32[8] = sum(%4) {dims=[0]}\n",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("  %6: Float32[8, 16] = mul(%2) {scalars=[2]"), std::string::npos) << text;

  std::vector<Tensor> outs = replay(rec.graph, {x, b});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_TRUE(bitwise_equal<float>(outs[0], r));
  EXPECT_TRUE(bitwise_equal<float>(outs[1], w));
  // A replay on new inputs of the same metadata computes what eager mode computes.
  Tensor x2 = randn({8, 16}), b2 = randn({16});
  std::vector<Tensor> outs2 = replay(rec.graph, {x2, b2});
  EXPECT_TRUE(bitwise_equal<float>(outs2[0], sum(add(x2, b2).t().exp(), {0})));
  EXPECT_TRUE(bitwise_equal<float>(outs2[1], mul(add(x2, b2), 2)));
}
