#include "jit/plan/body_plans.h"

#include <atomic>
#include <exception>
#include <utility>

#include "runtime/logging.h"
#include "tracer/graph_hash.h"

namespace kiln::jit {

using tracer::Graph;

namespace {

std::atomic<bool> g_warned_body{false};

// One plan per distinct body within a planning: the exact key, then the full check (a hash
// collision must never share a plan between different bodies).
class BodyMemo {
 public:
  std::shared_ptr<tracer::RegionPlan> plan(const Graph& body, tracer::RegionPlanner& planner) {
    // The very same body (nodes share their bodies: the calls of one region) needs no key.
    for (const Entry& e : entries_)
      if (e.body == &body) return e.plan;
    const uint64_t key = tracer::graph_hash(body);
    for (const Entry& e : entries_)
      if (e.key == key && tracer::structurally_equal(*e.body, body)) return e.plan;
    std::shared_ptr<tracer::RegionPlan> p;
    if (tracer::random_nodes(body).empty()) {  // a body's draws are its recording's: interpreted
      try {
        p = planner.plan(body, {});
      } catch (const std::exception& e) {
        if (!g_warned_body.exchange(true))
          KILN_WARN(Jit, "planning a body of {} ops failed; it is interpreted: {}",
                    body.nodes.size(), e.what());
      }
    }
    entries_.push_back({key, &body, p});
    return p;
  }

 private:
  struct Entry {
    uint64_t key;
    const Graph* body;
    std::shared_ptr<tracer::RegionPlan> plan;
  };
  std::vector<Entry> entries_;
};

}  // namespace

BodyPlans plan_bodies(const Graph& g, tracer::RegionPlanner& planner, bool* any) {
  BodyPlans out(g.nodes.size());
  *any = false;
  BodyMemo memo;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const auto& subgraphs = g.nodes[j].subgraphs;
    for (const Graph& body : subgraphs) {
      out[j].push_back(memo.plan(body, planner));
      *any = *any || out[j].back() != nullptr;
    }
  }
  return out;
}

}  // namespace kiln::jit
