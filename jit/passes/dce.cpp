#include "jit/passes/dce.h"

#include "tracer/canonicalize.h"

namespace kiln::jit::passes {

int dce(PassGraph& pg) {
  // Nothing dead and numbered in order: nothing to rebuild (most rounds on most graphs).
  if (tracer::is_canonical_keeping_inputs(pg.graph)) return 0;
  const size_t before = pg.graph.nodes.size();
  tracer::CanonicalGraph cg = tracer::canonicalize(pg.graph, /*keep_inputs=*/true);
  std::vector<int32_t> origin(cg.node_origin.size());
  for (size_t j = 0; j < origin.size(); ++j)
    origin[j] = pg.origin[static_cast<size_t>(cg.node_origin[j])];
  pg.graph = std::move(cg.graph);
  pg.origin = std::move(origin);
  return static_cast<int>(before - pg.graph.nodes.size());
}

}  // namespace kiln::jit::passes
