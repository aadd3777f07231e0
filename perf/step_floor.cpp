// kiln-step-floor: the GEMM floor of kiln-perf's mlp_train and block workloads. Runs exactly the
// matrix products of one step (the shapes, transposes and operand layouts of the recorded graphs,
// through eager kiln::matmul, which makes the same BLAS calls as the JIT's BLAS steps: the same
// row split over kiln's threads, the same OpenBLAS thread choice for what is not split) and
// nothing else, so that a workload's median minus this floor is its non-GEMM time.
//
// Prints, per product and for the whole step, the median over repetitions of the step's GEMMs
// run back to back (as the step runs them), their flops and GFLOP/s, and, for scale, one
// single-threaded sgemm of 1024x1024x1024 (a core's practical peak).
//
//   kiln-step-floor [reps]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "ops/cpu/blas_gemm.h"
#include "ops/cpu/openblas_library.h"
#include "runtime/parallel.h"

namespace {

using kiln::Tensor;

struct Product {
  std::string name;
  Tensor a, b;
  double flops = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Product product(std::string name, Tensor a, Tensor b) {
  const int64_t batch = a.numel() / (a.size(-2) * a.size(-1));
  const double flops =
      2.0 * double(batch) * double(a.size(-2)) * double(a.size(-1)) * double(b.size(-1));
  return {std::move(name), std::move(a), std::move(b), flops};
}

// mlp_train (perf/workloads/mlp_train.cpp): x [256, 784], weights [out, in]; linear is x @ w.t();
// the backward's products as the recorded graph has them (dW = g.t() @ h, dh = g @ w; no dx).
std::vector<Product> mlp_train_products() {
  const int64_t B = 256;
  Tensor x = kiln::randn({B, 784}), w1 = kiln::randn({1024, 784}), w2 = kiln::randn({1024, 1024}),
         w3 = kiln::randn({10, 1024});
  Tensor h1 = kiln::randn({B, 1024}), h2 = kiln::randn({B, 1024});
  Tensor g3 = kiln::randn({B, 10}), g2 = kiln::randn({B, 1024}), g1 = kiln::randn({B, 1024});
  return {
      product("fwd1 x@w1.t()", x, w1.t()),   product("fwd2 h1@w2.t()", h1, w2.t()),
      product("fwd3 h2@w3.t()", h2, w3.t()), product("dh2 g3@w3", g3, w3),
      product("dW3 g3.t()@h2", g3.t(), h2),  product("dh1 g2@w2", g2, w2),
      product("dW2 g2.t()@h1", g2.t(), h1),  product("dW1 g1.t()@x", g1.t(), x),
  };
}

// block (perf/workloads/transformer_block.cpp): batch 8, seq 512, d 512, 8 heads; the linears
// fold to [4096, K] @ w.t(), the attention's products read q, k, v as permuted slices of qkv.
std::vector<Product> block_products() {
  const int64_t B = 8, S = 512, D = 512, H = 8, hd = 64;
  Tensor h = kiln::randn({B * S, D}), wqkv = kiln::randn({3 * D, D}), wo = kiln::randn({D, D}),
         w1 = kiln::randn({4 * D, D}), w2 = kiln::randn({D, 4 * D});
  Tensor qkv = kiln::randn({B, S, 3 * D});
  auto head = [&](int64_t i) {
    return qkv.slice(2, i * D, (i + 1) * D).reshape({B, S, H, hd}).transpose(1, 2);
  };
  Tensor q = head(0), k = head(1), v = head(2);
  Tensor p = kiln::randn({B, H, S, S});
  Tensor m = kiln::randn({B * S, 4 * D});
  return {
      product("qkv h@wqkv.t()", h, wqkv.t()),
      product("scores q@k.t()", q, k.transpose(-2, -1)),
      product("attn p@v", p, v),
      product("out a@wo.t()", h, wo.t()),
      product("up h@w1.t()", h, w1.t()),
      product("down m@w2.t()", m, w2.t()),
  };
}

void report(const char* workload, std::vector<Product> ps, int reps) {
  std::vector<std::vector<double>> ms(ps.size());
  std::vector<double> total;
  for (int r = -2; r < reps; ++r) {  // two warm-up steps
    double step = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
      const double t0 = now_ms();
      Tensor c = kiln::matmul(ps[i].a, ps[i].b);
      const double t = now_ms() - t0;
      step += t;
      if (r >= 0) ms[i].push_back(t);
    }
    if (r >= 0) total.push_back(step);
  }
  double flops = 0;
  std::printf("\n%s: %d threads, median of %d steps\n", workload, kiln::num_threads(), reps);
  std::printf("%-18s %10s %10s %10s\n", "product", "MFLOP", "ms", "GFLOP/s");
  for (size_t i = 0; i < ps.size(); ++i) {
    const double t = median(ms[i]);
    flops += ps[i].flops;
    std::printf("%-18s %10.1f %10.3f %10.1f\n", ps[i].name.c_str(), ps[i].flops / 1e6, t,
                ps[i].flops / t / 1e6);
  }
  const double t = median(total);
  std::printf("%-18s %10.1f %10.3f %10.1f\n", "step GEMMs", flops / 1e6, t, flops / t / 1e6);
}

// One core's practical sgemm rate: 1024^3 on one OpenBLAS thread.
void core_peak(int reps) {
  const int n = 1024;
  std::vector<float> A(size_t(n) * n, 0.5f), B(size_t(n) * n, 0.25f), C(size_t(n) * n);
  kiln::blas::set_threads(1);
  std::vector<double> ms;
  for (int r = -2; r < reps; ++r) {
    const double t0 = now_ms();
    kiln::blas::openblas().sgemm(kiln::blas::kRowMajor, kiln::blas::kNoTrans, kiln::blas::kNoTrans,
                                 n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
    if (r >= 0) ms.push_back(now_ms() - t0);
  }
  const double t = median(ms);
  std::printf("\none thread, sgemm 1024x1024x1024: %.3f ms, %.1f GFLOP/s\n", t,
              2.0 * n * n * n / t / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  kiln::manual_seed(0);
  core_peak(reps);
  report("mlp_train (batch 256)", mlp_train_products(), reps);
  report("block (batch 8, seq 512, d 512)", block_products(), reps);
  return 0;
}
