// Canonical structural hashing of graphs: the key of the region cache (DESIGN.md, "Guards").
//
// Both functions walk one canonical encoding of the graph (a stream of 64-bit words), so that
// structurally_equal(a, b) implies graph_hash(a) == graph_hash(b) by construction. The encoding
// covers: op ids; every Attrs field (scalars with their kind and their exact bit pattern, so 0.0
// and -0.0, or two NaN payloads, are different keys); edges as definition positions (input i is
// position i, node j is position #inputs + j), so renumbered but identical graphs are equal;
// outputs; subgraphs, each as the id of its own encoding in a process-wide table of bodies (equal
// bodies, equal ids; computed once per shared body, tracer::Subgraphs), whose scalars are keyed
// by value in every mode but the skeleton (only top-level scalars are promoted: ScalarKey); and
// the metadata of inputs and node outputs, per mode:
//
// - HashMode::Exact: dtypes, devices, sizes, strides, and view offsets (relative to the offset
//   of the view's base, input 0).
// - HashMode::Shapeless: dtypes, devices, ranks, which dims are size 1 (broadcasting), and the
//   contiguity class of each input and view; not the sizes, strides or offsets themselves, so a
//   new batch size maps to the same key. Sizes baked into Attrs (a reshape's target shape) are
//   still part of the key.
//
// - HashMode::Skeleton: only dtypes, devices and ranks of the metadata, with the ops, edges and
//   the attrs' dtype, device and scalar kinds (not their integer values: an index, a target
//   shape). The region cache groups the variants of one program (other layouts, broadcasts,
//   aliasing, scalars, indices) under this key to enforce the recompile limit.
//
// ScalarKey::Kinds leaves the values of Attrs scalars out (only their kinds are encoded): the
// region cache then compares values itself, promoting a scalar that varies to a runtime input.
// The Philox seed and counter of random ops (ints[0] and ints[1]) are never in a Shapeless or
// Skeleton key: every replay draws fresh numbers from the offsets reserved when it was recorded.
//
// Graph-input storage offsets are never part of the key (they are data, like pointers).
// structurally_equal is the full check made on a cache hit: a hash collision must never run the
// wrong code.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/small_vector.h"
#include "tracer/graph.h"

namespace kiln::tracer {

enum class HashMode : uint8_t { Exact, Shapeless, Skeleton };
enum class ScalarKey : uint8_t { Values, Kinds };

// How a strided geometry is laid out, as far as generated code cares. Dims of size 1 never
// matter; a tensor with no elements is Contiguous. Empty strides mean row-major.
enum class Contiguity : uint8_t {
  Contiguous,         // row-major
  TransposedLastTwo,  // row-major once the last two dims are swapped (x.t(), x.mT())
  Other,              // anything else (broadcast stride 0, slices with gaps, permutations)
};
Contiguity contiguity_class(const DimVector& sizes, const DimVector& strides);
const char* contiguity_name(Contiguity c);

uint64_t graph_hash(const Graph& g, HashMode mode = HashMode::Exact,
                    ScalarKey scalars = ScalarKey::Values);
bool structurally_equal(const Graph& a, const Graph& b, HashMode mode = HashMode::Exact,
                        ScalarKey scalars = ScalarKey::Values);

// The most words of body encodings the process keeps interned (graph_hash.cpp: past it the table
// starts over); returns the previous limit. For tests (the default is 2^23, 64 MiB).
size_t set_body_table_limit(size_t words);

// The canonical encoding itself, and a (faster, different) hash of an encoding. The region cache
// keeps each region's encoding, so that a lookup encodes the new graph once and compares words.
std::vector<uint64_t> encode_graph(const Graph& g, HashMode mode, ScalarKey scalars);
// The same into `words` (cleared first; its capacity is reused: a lookup that hits allocates
// nothing, where a fresh vector of a large region's encoding cost page faults at every flush).
void encode_graph_into(const Graph& g, HashMode mode, ScalarKey scalars,
                       std::vector<uint64_t>& words);
uint64_t hash_encoding(std::span<const uint64_t> words);

// True for the attrs words that carry a random op's Philox seed and counter.
bool is_philox_attr(OpId op, size_t int_index);

}  // namespace kiln::tracer
