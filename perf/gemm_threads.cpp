// kiln-gemm-bench: where a second OpenBLAS thread starts to pay. Times row-major float32 sgemm
// (C = A @ B, optionally with A or B transposed) for each shape with 1, 2, ... OpenBLAS threads
// (up to KILN_NUM_THREADS or the cores) and through kiln::matmul, which picks the thread count
// per call (ops/cpu/blas_gemm.h, kFlopsPerThread), and split into row blocks over kiln's threads
// with one OpenBLAS thread each (blas::plan_row_split: the JIT's BLAS steps, "-" where the split
// is not allowed). Prints the median of batches of calls in µs, each shape's flops and the best
// OpenBLAS thread count. Interleaves the variants batch by batch so that
// the machine's load moves them alike.
//
//   kiln-gemm-bench [batches] [M,N,K[,ta,tb] ...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "ops/cpu/blas_gemm.h"
#include "ops/cpu/openblas_library.h"
#include "runtime/config.h"
#include "runtime/parallel.h"

namespace {

struct Shape {
  int M, N, K;
  bool ta = false, tb = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_us(const F& f, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
}

}  // namespace

int main(int argc, char** argv) {
  int batches = argc > 1 ? std::atoi(argv[1]) : 15;
  std::vector<Shape> shapes;
  for (int i = 2; i < argc; ++i) {
    Shape s{};
    int ta = 0, tb = 0;
    if (std::sscanf(argv[i], "%d,%d,%d,%d,%d", &s.M, &s.N, &s.K, &ta, &tb) < 3) {
      std::fprintf(stderr, "bad shape %s (M,N,K[,ta,tb])\n", argv[i]);
      return 2;
    }
    s.ta = ta != 0;
    s.tb = tb != 0;
    shapes.push_back(s);
  }
  if (shapes.empty())
    shapes = {
        {16, 64, 64},
        {32, 128, 128},
        {64, 128, 128},
        {64, 256, 256},
        {64, 256, 256, 0, 1},
        {128, 256, 256},
        {128, 512, 256},
        {256, 256, 256},
        {256, 512, 256},
        {256, 512, 512},
        {256, 1024, 784},
        {256, 1024, 1024},
        {256, 1024, 1024, 0, 1},
        {1024, 1024, 256, 1, 0},
        {784, 1024, 256, 1, 0},
        {256, 10, 1024},
        {512, 512, 512},
        {4096, 512, 512},
    };
  const int max_threads = kiln::num_threads();
  std::printf("threads 1..%d, median of %d batches, µs per call\n", max_threads, batches);
  std::printf("%-22s %12s", "M,N,K,ta,tb", "MFLOP");
  for (int t = 1; t <= max_threads; ++t) std::printf("   %2d thr µs", t);
  std::printf("  kiln µs  rows µs  best\n");
  for (const Shape& s : shapes) {
    std::vector<float> A(size_t(s.M) * s.K, 0.5f), B(size_t(s.K) * s.N, 0.25f),
        C(size_t(s.M) * s.N);
    const int lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
    kiln::Tensor a = s.ta ? kiln::full({s.K, s.M}, 0.5f).t() : kiln::full({s.M, s.K}, 0.5f);
    kiln::Tensor b = s.tb ? kiln::full({s.N, s.K}, 0.25f).t() : kiln::full({s.K, s.N}, 0.25f);
    const double flops = 2.0 * s.M * s.N * s.K;
    // About 20 ms per batch per variant.
    const int calls = std::max(1, int(20e-3 / (flops / 20e9)));
    auto gemm = [&] {
      using namespace kiln::blas;
      openblas().sgemm(kRowMajor, s.ta ? kTrans : kNoTrans, s.tb ? kTrans : kNoTrans, s.M, s.N, s.K,
                       1.0f, A.data(), lda, B.data(), ldb, 0.0f, C.data(), s.N);
    };
    auto matmul = [&] { (void)kiln::matmul(a, b); };
    kiln::Tensor c = kiln::empty({s.M, s.N});
    const kiln::blas::RowSplit split =
        kiln::blas::plan_row_split(a.impl(), b.impl(), kiln::kFloat32, true);
    auto rows = [&] {
      kiln::blas::set_threads(1);
      kiln::parallel_for(0, split.blocks, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          kiln::blas::gemm_rows(split, a.impl(), b.impl(), c.impl(),
                                kiln::blas::block_begin(split, i),
                                kiln::blas::block_begin(split, i + 1));
      });
    };
    std::vector<std::vector<double>> us(max_threads + 2);
    for (int t = 1; t <= max_threads; ++t) {  // warm-up
      kiln::blas::openblas().set_num_threads(t);
      time_us(gemm, calls);
    }
    time_us(matmul, calls);
    for (int r = 0; r < batches; ++r) {
      for (int t = 1; t <= max_threads; ++t) {
        kiln::blas::openblas().set_num_threads(t);
        us[t - 1].push_back(time_us(gemm, calls));
      }
      us[max_threads].push_back(time_us(matmul, calls));
      if (split.blocks >= 2) us[max_threads + 1].push_back(time_us(rows, calls));
    }
    std::string name = std::to_string(s.M) + "," + std::to_string(s.N) + "," + std::to_string(s.K) +
                       "," + (s.ta ? "1" : "0") + "," + (s.tb ? "1" : "0");
    std::printf("%-22s %12.2f", name.c_str(), flops / 1e6);
    int best = 1;
    double best_us = 1e300;
    for (int t = 1; t <= max_threads; ++t) {
      double m = median(us[t - 1]);
      std::printf(" %11.2f", m);
      if (m < best_us) best_us = m, best = t;
    }
    std::printf(" %8.2f", median(us[max_threads]));
    if (split.blocks >= 2)
      std::printf(" %8.2f  %d\n", median(us[max_threads + 1]), best);
    else
      std::printf(" %8s  %d\n", "-", best);
  }
  return 0;
}
