// Random programs for the recorder fuzzer (tests/test_record_fuzz.cpp): the step descriptors,
// the program, and the generator that makes a program from two seeds.
//
// A program is a list of step descriptors made from the seed before anything runs. A descriptor
// holds raw random numbers that the interpreter (tests/fuzz/run_step.h) resolves against tensor
// metadata (which operand, which dim, which slice), and metadata is known at once in both modes,
// so both runs make the same choices without touching the generator.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::fuzz {

constexpr int kPool = 10;

enum class Kind : uint8_t {
  Leaf,
  Random,
  Seed,
  Dropout,
  Unary,
  Binary,
  BinaryScalar,
  Compare,
  Where,
  Reduce,
  Matmul,
  Softmax,
  View,
  InPlace,
  Read,
  Drop,
  Sync,
  Toggle,    // recorded runs switch recording off or back on (eager runs: nothing)
  Extra,     // shape/index/nn ops, more reductions, factories (tests/fuzz/run_step_extra.cpp)
  Backward,  // a small loss of a detached copy, backward, the gradient goes to the pool
};

// Ops of Kind::Extra and Kind::Backward (the generator draws `op` below these counts).
constexpr int kExtraOps = 20;
constexpr int kBackwardOps = 8;

struct Step {
  Kind kind = Kind::Sync;
  uint8_t op = 0;         // which op of the kind
  uint32_t r[4] = {};     // raw choices, resolved against tensor metadata when the step runs
  int dst = 0;            // pool slot that receives the result
  Scalar s;               // scalar operand (drawn from the value stream)
  double lo = 0, hi = 0;  // clamp bounds
  Shape shape;            // Leaf / Random
  DType dtype = kFloat32;
  std::vector<double> data;  // Leaf values
};

struct Program {
  uint64_t seed = 0;        // structure seed, also the manual_seed of the run
  uint64_t value_seed = 0;  // scalars and data
  Shape canon;              // most tensors broadcast against it
  std::vector<Step> steps;
};

// `structure` decides the ops and operands; `values` the scalars and data, so that two programs
// with the same structure seed and different value seeds record graphs that differ only in their
// scalars (the region cache then promotes them to runtime inputs).
class Generator {
 public:
  Generator(uint64_t structure_seed, uint64_t value_seed)
      : seed_(structure_seed),
        value_seed_(value_seed),
        st_(structure_seed),
        va_(value_seed ^ 0x9e3779b97f4a7c15ull) {}

  Program make();

 private:
  int below(int n) { return static_cast<int>(st_() % static_cast<uint32_t>(n)); }
  uint32_t raw() { return static_cast<uint32_t>(st_()); }
  int vbelow(int n) { return static_cast<int>(va_() % static_cast<uint32_t>(n)); }

  Shape sub_shape(const Shape& canon);
  DType pick_dtype();
  double value(DType d);
  Scalar scalar();
  Step leaf(const Shape& canon, int dst);
  Step step(const Shape& canon);

  uint64_t seed_, value_seed_;
  std::mt19937_64 st_, va_;
};

}  // namespace kiln::fuzz
