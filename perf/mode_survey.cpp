// kiln-mode-survey: common consumer patterns (pointwise chains, reductions over rows, columns and
// dim sets, softmax and its neighbours, losses, norms, attention, training steps, indexing), each
// timed in eager and in jit mode in one process, the modes alternating, best of `reps` runs of
// each. Prints eager ms, jit ms and eager / jit; a pattern below 1.0x (jit slower) is marked
// "!!". kiln-perf measures a few workloads against their targets; this is the wider net for
// issue 13's "no workload in jit mode slower than eager" (docs/performance.md: it found a masked
// softmax, softmax's argmax and a leaf's gathered mean below 1.0x on 2026-12-01).
// Usage: kiln-mode-survey [reps] [name-substring]   (default 7, every pattern)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"

using namespace kiln;

namespace {

struct Pattern {
  std::string name;
  std::function<Tensor()> run;
};

double time_ms(const Pattern& p) {
  const auto t0 = std::chrono::steady_clock::now();
  const Tensor r = p.run();
  (void)r.contiguous().to(kFloat32).data_ptr<float>();  // waits for the result
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const std::string only = argc > 2 ? argv[2] : "";
  manual_seed(1);
  const int64_t N = 4096, D = 1024;
  const Tensor x = randn({N, D}), y = rand({N, D}), w = randn({D}), b = randn({D});
  const Tensor xt = randn({D, N}).t(), sq = randn({D, D}) * 0.03;
  const Tensor m = rand({N, D}) > 0.5, xi = randint(0, 100, {N, D});
  const Tensor t = randint(0, D, {N});
  const Tensor img = randn({32, 64, 56, 56}), big = randn({int64_t{1} << 24});
  const Tensor x3 = randn({16, 512, 512}), xd = randn({1024, 1024}).to(kFloat64);
  const Tensor a = randn({64, 128, 128}), c = randn({64, 128, 128});
  const Tensor q = randn({8, 8, 256, 64}), k = randn({8, 8, 256, 64}), v = randn({8, 8, 256, 64});
  const Tensor mask = triu(full({256, 256}, -INFINITY), 1);
  const Tensor emb = randn({32000, 512}), ids = randint(0, 32000, {8, 512});
  std::vector<Tensor> params;
  for (int i = 0; i < 8; ++i) params.push_back(randn({512, 512}).requires_grad_());
  optim::Adam adam(params, optim::AdamOptions(1e-3));
  auto grad_of = [](const Tensor& in, const std::function<Tensor(const Tensor&)>& f) {
    const Tensor g = in.detach().requires_grad_();
    f(g).sum().backward();
    return g.grad();
  };
  const std::vector<Pattern> patterns = {
      {"relu(x) * y + 1", [&] { return relu(x) * y + 1.0; }},
      {"x.t() + y", [&] { return xt + y; }},
      {"where(m, x, y)", [&] { return where(m, x, y); }},
      {"int64 x * 3 + x", [&] { return xi * 3 + xi; }},
      {"silu(x) * y", [&] { return silu(x) * y; }},
      {"gelu(x)", [&] { return gelu(x); }},
      {"log1p(exp(x))", [&] { return log1p(exp(x)); }},
      {"x.pow(2.5)", [&] { return x.pow(2.5); }},
      {"dropout(x, 0.1)", [&] { return dropout(x, 0.1, true); }},
      {"cat + mul",
       [&] {
         return cat({x, y}, 1) * 2.0;
       }},
      {"chunk arithmetic",
       [&] {
         const auto ch = chunk(x, 4, 1);
         return ch[0] + ch[1] * ch[2] - ch[3];
       }},
      {"x.sum()", [&] { return x.sum(); }},
      {"big.sum()", [&] { return big.sum(); }},
      {"x.mean(0)", [&] { return x.mean({0}); }},
      {"x.amax(-1)", [&] { return x.amax({-1}); }},
      {"x.argmax(-1)", [&] { return x.argmax(-1); }},
      {"x.argmax(0)", [&] { return x.argmax(0); }},
      {"x.var(-1)", [&] { return x.var({-1}); }},
      {"x.std(-1)", [&] { return x.std({-1}); }},
      {"(x > 0).sum()", [&] { return (x > 0.0).sum(); }},
      {"x3.sum(1)", [&] { return x3.sum({1}); }},
      {"short rows: mean of 32",
       [&] {
         return x.reshape({N, 32, 32}).mean({-1});
       }},
      {"x.t().sum(-1)", [&] { return xt.sum({-1}); }},
      {"in-place mul_ add_", [&] { return y.clone().mul_(0.9).add_(x * 0.1); }},
      {"int32 abs(3x + 7)", [&] { return (xi.to(kInt32) * 3 + 7).abs(); }},
      {"x3.mean(0)", [&] { return x3.mean({0}); }},
      {"img.mean({0, 2, 3})",
       [&] {
         return img.mean({0, 2, 3});
       }},
      {"batch norm stats",
       [&] {
         return img.mean({0, 2, 3}) + img.var({0, 2, 3});
       }},
      {"f64 softmax", [&] { return softmax(xd, -1); }},
      {"softmax(x, 0)", [&] { return softmax(x, 0); }},
      {"softmax(x).argmax(-1)", [&] { return softmax(x, -1).argmax(-1); }},
      {"softmax(a @ c * s)", [&] { return softmax(bmm(a, c) * 0.125, -1); }},
      {"masked softmax (loaded -inf)",
       [&] { return softmax(a + mask.narrow(0, 0, 128).narrow(1, 0, 128), -1); }},
      {"entropy", [&] { return -(softmax(x, -1) * log_softmax(x, -1)).sum({-1}); }},
      {"layer_norm(x)", [&] { return layer_norm(x, {D}, w, b); }},
      {"rms norm", [&] { return x * rsqrt((x * x).mean({-1}, true) + 1e-6) * w; }},
      {"l2 normalize", [&] { return x / sqrt((x * x).sum({-1}, true) + 1e-6); }},
      {"cosine similarity",
       [&] {
         return (x * y).sum({-1}) / (sqrt((x * x).sum({-1})) * sqrt((y * y).sum({-1})) + 1e-8);
       }},
      {"cross_entropy fwd+bwd",
       [&] { return grad_of(x, [&](const Tensor& g) { return cross_entropy(g, t); }); }},
      {"nll by gather fwd+bwd",
       [&] {
         return grad_of(x, [&](const Tensor& g) {
           return -log_softmax(g, -1).gather(1, t.unsqueeze(1)).mean();
         });
       }},
      {"nll by one_hot",
       [&] { return -(one_hot(t, D).to(kFloat32) * log_softmax(x, -1)).sum({-1}).mean(); }},
      {"bce with logits", [&] { return (relu(x) - x * y + log1p(exp(-abs(x)))).mean(); }},
      {"sigmoid focal",
       [&] { return (-(y * pow(1.0 - sigmoid(x), 2.0) * log(sigmoid(x)))).mean(); }},
      {"gelu(2x + 1) fwd+bwd",
       [&] { return grad_of(x, [](const Tensor& g) { return gelu(g * 2.0 + 1.0); }); }},
      {"linear + gelu fwd+bwd",
       [&] {
         return grad_of(x,
                        [&](const Tensor& g) { return gelu(linear(layer_norm(g, {D}), sq, b)); });
       }},
      {"sdpa causal", [&] { return scaled_dot_product_attention(q, k, v, true); }},
      {"attention by hand fwd+bwd",
       [&] {
         return grad_of(q, [&](const Tensor& g) {
           return softmax(g.matmul(k.transpose(-2, -1)) * 0.125 + mask, -1).matmul(v);
         });
       }},
      {"adam step, 8 x 512^2",
       [&] {
         adam.zero_grad();
         Tensor loss = (params[0] * params[0]).sum();
         for (size_t i = 1; i < params.size(); ++i) loss = loss + (params[i] * params[i]).sum();
         loss.backward();
         adam.step();
         return params[0];
       }},
      {"embedding * 2", [&] { return embedding(emb, ids) * 2.0; }},
      {"index_select * 2", [&] { return index_select(x, 0, t) * 2.0; }},
      {"img permute contiguous",
       [&] {
         return img.permute({0, 2, 3, 1}).contiguous();
       }},
      {"tril * 2", [&] { return tril(a) * 2.0; }},
  };
  std::printf("%-30s %10s %10s %9s\n", "pattern", "eager ms", "jit ms", "eager/jit");
  int slower = 0;
  for (const Pattern& p : patterns) {
    if (!only.empty() && p.name.find(only) == std::string::npos) continue;
    double best[2] = {1e30, 1e30};
    for (int mode = 0; mode < 2; ++mode) {  // warm: the jit's first calls record and compile
      config().jit = mode == 1;
      for (int i = 0; i < 3; ++i) time_ms(p);
    }
    for (int r = 0; r < reps; ++r)
      for (int mode = 0; mode < 2; ++mode) {
        config().jit = mode == 1;
        best[mode] = std::min(best[mode], time_ms(p));
      }
    const double ratio = best[0] / best[1];
    slower += ratio < 1.0;
    std::printf("%-30s %10.3f %10.3f %8.2fx%s\n", p.name.c_str(), best[0], best[1], ratio,
                ratio < 1.0 ? "  !!" : "");
  }
  std::printf("%d pattern(s) slower in jit mode (!!); noise moves memory-bound ones by ~5%%\n",
              slower);
  return 0;
}
