// compile_layers: N identical transformer blocks (perf/workloads/transformer_block.h; batch 2,
// seq 64, d 64, 4 heads), each called through one kiln::region reused for every layer, with the
// layer's weights passed as arguments (not captured), so every call has the same signature.
// Measured at N = 1, 4, 16, 48 (1, 4 small), one figure each (JSON key "layers"). BENCHMARKS.md
// judges its first call against N: with regional compilation, one body is compiled once and the
// first call stays flat in N. Today (no JIT) interp mode traces the body at every call and
// interprets it, so the first call is recording + one region-cache miss + interpretation.
#include <atomic>

#include "perf/workload.h"
#include "perf/workloads/transformer_block.h"
#include "tracer/hop/region_registry.h"

namespace kiln::perf {

namespace {

constexpr int64_t kBatch = 2, kSeq = 64, kD = 64, kHeads = 4;

// Each case gets a region name of its own, so that its first call is the first the registry and
// the tracer see of that region (jobs run one after the other in one process).
std::string fresh_region_name() {
  static std::atomic<int> next{0};
  return fmt::format("perf.compile_layers.block{}", next++);
}

class CompileLayersCase : public Case {
 public:
  explicit CompileLayersCase(int64_t layers)
      : layer_(region(fresh_region_name(), [](const TensorList& a) {
          TensorList w(a.begin() + 1, a.end());
          return TensorList{transformer_block(a[0], w, kHeads)};
        })) {
    manual_seed(0);
    x_ = randn({kBatch, kSeq, kD});
    for (int64_t i = 0; i < layers; ++i) weights_.push_back(make_block_weights(kD));
  }

  void run() override {
    NoGradGuard no_grad;
    Tensor h = x_;
    for (const TensorList& w : weights_) {
      TensorList args = {h};
      args.insert(args.end(), w.begin(), w.end());
      h = layer_(args)[0];
    }
    y_ = h;
  }

  void check() const override {
    check_block_output("compile_layers", x_, y_);
    // One region, one signature: every layer is a call of the same body.
    size_t sigs = hop::region_signature_count(layer_.name());
    KILN_CHECK(sigs == 1, "compile_layers: region '{}' saw {} signatures, expected 1",
               layer_.name(), sigs);
  }

 private:
  Region layer_;
  Tensor x_, y_;
  std::vector<TensorList> weights_;
};

}  // namespace

Workload compile_layers_workload() {
  Workload w{"compile_layers",
             "N transformer blocks (d 64) through one region, N = 1, 4, 16, 48; first call vs N",
             "", nullptr};
  w.param_name = "layers";
  w.param_values = [](Size size) {
    return size == Size::Small ? std::vector<int64_t>{1, 4} : std::vector<int64_t>{1, 4, 16, 48};
  };
  w.prepare_at = [](Size, Device, int64_t layers) {
    Prepared p;
    p.c = std::make_unique<CompileLayersCase>(layers);
    p.shape = fmt::format("batch {}, seq {}, d {}", kBatch, kSeq, kD);  // N: in the name
    return p;
  };
  return w;
}

}  // namespace kiln::perf
