// Random programs over the higher-order ops (tracer/hop/hop.h) for
// tests/test_record_fuzz_hop.cpp: cond, scan, map, while_loop, region and checkpoint whose bodies
// are a few random pointwise and reduction ops, nested up to depth 2, between plain steps of the
// recorder fuzzer (tests/fuzz/program.h: pointwise ops, views, in-place writes, reads).
//
// As there, a program is made from its seed before anything runs, and its raw choices are resolved
// against tensor metadata, so the eager and recorded runs make the same choices.
#pragma once
#include <cstdint>
#include <vector>

#include "fuzz/program.h"

namespace kiln::fuzz {

struct Body;

// One op of a body over its current value v; v keeps (or broadcasts back to) the body's shape.
struct BodyOp {
  enum Kind : uint8_t {
    Unary,       // v = f(v)
    Binary,      // v = f(v, an argument or the capture)
    WithScalar,  // v = f(v, x)
    ReduceDim,   // v = v -/* reduce(v, one dim, keepdim)
    ReduceAll,   // v = v combined with a full reduction
    Where,       // v = where(v > x, v, an argument or the capture)
    NestedCond,  // v = cond(sum(v) > x, inner[0], inner[1], {v, an argument})[0]
    NestedMap,   // v = map(inner[0], {v})[0] (over dim 0)
    Random,      // v = dropout(v, 0.5): falls back by design
    ReadsData,   // v = v * sum(v).item(): falls back by design
  };
  Kind kind = Unary;
  uint8_t op = 0;
  uint32_t r = 0;
  double x = 0;
  std::vector<Body> inner;
};

// A body: v starts as argument `start` cast to `work`; after the ops, v is cast to `dtype` and
// broadcast to the arguments' common shape (or summed to one element when `reduce_out`).
struct Body {
  std::vector<BodyOp> ops;
  uint8_t start = 0;
  DType work = kFloat32;
  DType dtype = kFloat32;
  bool reduce_out = false;
};

struct HopStep {
  enum Kind : uint8_t { Plain, Cond, Scan, Map, While, RegionCall, Checkpoint, MutateCapture };
  Kind kind = Plain;
  Step plain;                 // Plain: a step of the recorder fuzzer
  std::vector<Body> bodies;   // the callables' bodies
  uint32_t r[4] = {};         // operand choices
  uint8_t op = 0;             // predicate form (Cond, While), mutation (MutateCapture)
  double x = 0;               // predicate threshold, mutation scalar
  int dst = 0, dst2 = 0;      // slots for the first and second results
  int steps = 1;              // Scan/Map: T of own data; While: the counter's bound
  std::vector<double> data;   // Scan/Map: own [T, canon] xs (empty: take xs from the pool)
  DType dtype = kFloat32;     // Scan: the carry's dtype; While: the carried value's
  int region = 0;             // RegionCall: which region
  bool grad = false;          // operands require grad (the fallback), then backward
  bool two_outputs = false;   // Cond, Map: a second output
  bool pool_capture = false;  // Cond, Scan, Map, While: capture a pool tensor instead of w
};

struct HopProgram {
  uint64_t seed = 0;
  Shape canon;
  Shape capture_shape;  // the program's captured tensor w (regions always capture it)
  std::vector<double> capture_data;
  std::vector<Body> regions;  // one body per region
  std::vector<HopStep> steps;
};

HopProgram make_hop_program(uint64_t seed);

// A short text form of a body (for the reproducer listing).
std::string describe(const Body& b);

}  // namespace kiln::fuzz
