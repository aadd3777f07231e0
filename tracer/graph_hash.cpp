#include "tracer/graph_hash.h"

#include "ops/random.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::tracer {

namespace {

bool is_row_major(const DimVector& sizes, const DimVector& strides) {
  if (std::find(sizes.begin(), sizes.end(), int64_t{0}) != sizes.end()) return true;
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// splitmix64's finalizer: a bijective mix with full avalanche.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct HashSink {
  uint64_t h = 0xcbf29ce484222325ull;
  void put(uint64_t w) { h = mix(h ^ w); }
};

struct VectorSink {
  std::vector<uint64_t> words;
  void put(uint64_t w) { words.push_back(w); }
};

// Tags separate the sections, so that no two different graphs share an encoding (every list is
// also length-prefixed).
enum Tag : uint64_t {
  kGraph = 0x4b47,
  kInput,
  kNode,
  kAttrs,
  kMeta,
  kSubgraphs,
  kOutputs,
  kEnd,
  kBodyId
};
constexpr uint64_t kUndefinedValue = ~0ull;

// The process's table of body encodings, per key kind (Subgraphs::kKeyKinds). Ids are never
// reused, so an id always names one encoding (a region's key may outlive every graph holding the
// body). Past kMaxWords the table is emptied and starts over (a program whose loop body bakes a
// new scalar on every call would grow it without end): ids below `first` are then stale, and a
// body whose cached id is stale is interned again, so equal bodies keep equal ids; a region key
// made before costs a cache miss, never a wrong hit.
struct BodyTable {
  size_t max_words = size_t{1} << 23;  // 64 MiB of encodings (set_body_table_limit: tests)
  struct WordsHash {
    size_t operator()(const std::vector<uint64_t>& w) const {
      uint64_t h = w.size();
      for (uint64_t x : w) h = mix(h ^ x);
      return h;
    }
  };
  std::mutex mu;
  std::unordered_map<std::vector<uint64_t>, uint64_t, WordsHash> ids[Subgraphs::kKeyKinds];
  uint64_t next = 1;
  std::atomic<uint64_t> first{1};  // the first id of the table's contents
  size_t words = 0;                // in the table
};

BodyTable& body_table() {
  static auto* table = new BodyTable();  // never destroyed: flushes may run during exit
  return *table;
}

static_assert(static_cast<int>(HashMode::Skeleton) * 2 + static_cast<int>(ScalarKey::Kinds) <
                  Subgraphs::kKeyKinds,
              "a key kind (mode, scalar key) per Subgraphs id slot");

uint64_t intern_body(int kind, std::vector<uint64_t> words) {
  BodyTable* table = &body_table();
  std::lock_guard lock(table->mu);
  const size_t size = words.size();
  if (table->words + size > table->max_words && !table->ids[kind].contains(words)) {
    for (auto& m : table->ids) m.clear();
    table->words = 0;
    table->first.store(table->next, std::memory_order_release);
  }
  auto [it, added] = table->ids[kind].try_emplace(std::move(words), table->next);
  if (added) {
    ++table->next;
    table->words += size;
  }
  return it->second;
}

template <class Sink>
class Encoder {
 public:
  Encoder(Sink& sink, HashMode mode, ScalarKey scalars)
      : sink_(sink), mode_(mode), scalars_(scalars) {}

  void graph(const Graph& g) {
    // Definition positions of the values (edges are encoded by position, not by id).
    // Storage offsets too: a view's offset is absolute in its base's storage, and is encoded
    // relative to the base's offset, so that input offsets (data, like pointers) stay out of the
    // key even through views.
    const auto nvalues = static_cast<size_t>(std::max(g.num_values(), 0));
    std::vector<int64_t> position(nvalues, -1);
    std::vector<int64_t> offset(nvalues, 0);
    int64_t next = 0;
    auto define = [&](ValueId id, const ValueMeta& m) {
      if (id >= 0 && id < g.num_values()) {
        position[id] = next;
        offset[id] = m.offset;
      }
      ++next;
    };
    for (const GraphInput& in : g.inputs) define(in.id, in.meta);
    for (const Node& n : g.nodes) define(n.output, n.meta);
    auto base_offset = [&](const Node& n) -> int64_t {
      if (n.inputs.empty()) return 0;
      const ValueId base = n.inputs[0];
      return base >= 0 && base < g.num_values() ? offset[base] : 0;
    };
    auto ref = [&](ValueId id) {
      const bool ok = id >= 0 && id < g.num_values() && position[id] >= 0;
      put(ok ? static_cast<uint64_t>(position[id]) : kUndefinedValue);
    };

    put(kGraph);
    put(g.inputs.size());
    for (const GraphInput& in : g.inputs) {
      put(kInput);
      meta(in.meta, /*is_input=*/true, 0);
    }
    put(g.nodes.size());
    for (const Node& n : g.nodes) {
      put(kNode);
      put(static_cast<uint64_t>(n.op));
      put(n.inputs.size());
      for (ValueId v : n.inputs) ref(v);
      attrs(n.op, n.attrs);
      meta(n.meta, /*is_input=*/false, base_offset(n));
      put(kSubgraphs);
      put(n.subgraphs.size());
      for (size_t i = 0; i < n.subgraphs.size(); ++i) body(n.subgraphs, i);
    }
    put(kOutputs);
    put(g.outputs.size());
    for (ValueId v : g.outputs) ref(v);
    put(kEnd);
  }

 private:
  void put(uint64_t w) { sink_.put(w); }

  // A body is encoded as the id of its own encoding in a process-wide table (one table per key
  // kind, ids never reused): equal bodies, equal ids; different bodies, different ids. So a key
  // is canonical as before, but holds one word per body instead of its words, and the id is kept
  // on the body's shared list (tracer::Subgraphs): the calls of one region are encoded once in a
  // process, not at every flush (a 48-layer model's key held ~1 MB of body words before).
  // A body's scalars are keyed by value (except in a skeleton): only the top level's scalars
  // are promoted to runtime inputs when they vary (RegionCache::lookup), so a body whose
  // scalar changed (a cond branch's `x * s` for another s) must not hit the region planned
  // with the old value baked into its body plan. The skeleton keeps kinds, so those variants
  // stay one family under the recompile limit.
  void body(const Subgraphs& list, size_t i) {
    const ScalarKey key = mode_ == HashMode::Skeleton ? scalars_ : ScalarKey::Values;
    const int kind = static_cast<int>(mode_) * 2 + static_cast<int>(key);
    uint64_t id = list.body_id(i, kind);
    if (id < body_table().first.load(std::memory_order_acquire)) {  // none yet (0), or stale
      VectorSink words;
      Encoder<VectorSink>(words, mode_, key).graph(list[i]);
      id = intern_body(kind, std::move(words.words));
      list.set_body_id(i, kind, id);
    }
    put(kBodyId);
    put(id);
  }

  void attrs(OpId op, const Attrs& a) {
    put(kAttrs);
    put(a.dims.size());
    // A skeleton keeps the attrs' layout but not their integer values (an index, a shape): the
    // variants of one program that differ only there are one family, under one recompile limit.
    const bool values = mode_ != HashMode::Skeleton;
    if (values)
      for (int64_t d : a.dims) put(static_cast<uint64_t>(d));
    for (const Scalar& s : a.scalars) {
      put(static_cast<uint64_t>(s.category()));
      if (scalars_ == ScalarKey::Values)
        put(s.is_floating() ? std::bit_cast<uint64_t>(s.to_double())
                            : static_cast<uint64_t>(s.to_int()));
    }
    for (size_t i = 0; values && i < a.ints.size(); ++i) {
      if (mode_ != HashMode::Exact && is_philox_attr(op, i)) continue;
      put(static_cast<uint64_t>(a.ints[i]));
    }
    put(static_cast<uint64_t>(a.dtype));
    device(a.device);
  }

  void device(Device d) {
    put((static_cast<uint64_t>(d.type) << 8) | static_cast<uint8_t>(d.index));
  }

  void meta(const ValueMeta& m, bool is_input, int64_t base_offset) {
    put(kMeta);
    put(static_cast<uint64_t>(m.dtype));
    device(m.device);
    put(m.sizes.size());
    if (mode_ == HashMode::Skeleton) return;
    // Node outputs without strides are fresh row-major tensors; views and inputs have a layout.
    const bool has_layout = is_input || !m.strides.empty();
    put(has_layout);
    if (mode_ == HashMode::Exact) {
      for (int64_t s : m.sizes) put(static_cast<uint64_t>(s));
      if (has_layout) {
        put(m.strides.size());
        for (int64_t s : m.strides) put(static_cast<uint64_t>(s));
        if (!is_input) put(static_cast<uint64_t>(m.offset - base_offset));
      }
    } else if (mode_ == HashMode::Shapeless) {
      for (int64_t s : m.sizes) put(s == 1);
      if (has_layout) {
        put(static_cast<uint64_t>(contiguity_class(m.sizes, m.strides)));
      }
    }
  }

  Sink& sink_;
  HashMode mode_;
  ScalarKey scalars_;
};

}  // namespace

Contiguity contiguity_class(const DimVector& sizes, const DimVector& strides) {
  if (strides.empty()) return Contiguity::Contiguous;
  if (strides.size() != sizes.size()) return Contiguity::Other;
  if (is_row_major(sizes, strides)) return Contiguity::Contiguous;
  if (sizes.size() < 2) return Contiguity::Other;
  DimVector s = sizes, st = strides;
  const size_t r = sizes.size();
  std::swap(s[r - 1], s[r - 2]);
  std::swap(st[r - 1], st[r - 2]);
  return is_row_major(s, st) ? Contiguity::TransposedLastTwo : Contiguity::Other;
}

const char* contiguity_name(Contiguity c) {
  switch (c) {
    case Contiguity::Contiguous:
      return "contiguous";
    case Contiguity::TransposedLastTwo:
      return "transposed";
    case Contiguity::Other:
      break;
  }
  return "other";
}

bool is_philox_attr(OpId op, size_t int_index) {
  return (int_index == kPhiloxSeedInt || int_index == kPhiloxCounterInt) &&
         (op_def(op).flags & kIsRandom);
}

size_t set_body_table_limit(size_t words) {
  BodyTable& table = body_table();
  std::lock_guard lock(table.mu);
  return std::exchange(table.max_words, words);
}

uint64_t graph_hash(const Graph& g, HashMode mode, ScalarKey scalars) {
  HashSink sink;
  Encoder<HashSink>(sink, mode, scalars).graph(g);
  return sink.h;
}

namespace {

// Nodes and inputs of g, for a first guess of the encoding's length (a body is one id).
size_t encoded_items(const Graph& g) { return 24 * g.nodes.size() + 8 * g.inputs.size(); }

}  // namespace

void encode_graph_into(const Graph& g, HashMode mode, ScalarKey scalars,
                       std::vector<uint64_t>& words) {
  VectorSink sink;
  sink.words = std::move(words);
  sink.words.clear();
  sink.words.reserve(16 + encoded_items(g));
  Encoder<VectorSink>(sink, mode, scalars).graph(g);
  words = std::move(sink.words);
}

std::vector<uint64_t> encode_graph(const Graph& g, HashMode mode, ScalarKey scalars) {
  std::vector<uint64_t> words;
  encode_graph_into(g, mode, scalars, words);
  return words;
}

uint64_t hash_encoding(std::span<const uint64_t> words) {
  // Cheaper than HashSink's full mix per word (this runs on every flush): a multiply-rotate
  // per word and one full mix at the end. Collisions only cost a failed comparison.
  uint64_t h = 0x9e3779b97f4a7c15ull ^ words.size();
  for (uint64_t w : words) {
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h = (h << 29) | (h >> 35);
  }
  return mix(h);
}

bool structurally_equal(const Graph& a, const Graph& b, HashMode mode, ScalarKey scalars) {
  VectorSink ea, eb;
  Encoder<VectorSink>(ea, mode, scalars).graph(a);
  Encoder<VectorSink>(eb, mode, scalars).graph(b);
  return ea.words == eb.words;
}

}  // namespace kiln::tracer
