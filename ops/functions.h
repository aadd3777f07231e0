// The public op functions of API.md. Each is a thin wrapper that packs inputs and attributes and
// calls the dispatcher; the op's definition (meta function, kernel) lives in the file of its
// family.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/int_list.h"
#include "runtime/scalar.h"
#include "runtime/tensor.h"
#include "runtime/tensor_options.h"

namespace kiln {

// ---- factories (ops/factories.cpp, ops/random.cpp) ----
Tensor empty(IntList shape, TensorOptions opts = {});
Tensor zeros(IntList shape, TensorOptions opts = {});
Tensor ones(IntList shape, TensorOptions opts = {});
Tensor full(IntList shape, const Scalar& value, TensorOptions opts = {});
Tensor arange(const Scalar& end, TensorOptions opts = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              TensorOptions opts = {});
Tensor linspace(double start, double end, int64_t steps, TensorOptions opts = {});
Tensor eye(int64_t n, TensorOptions opts = {});
Tensor rand(IntList shape, TensorOptions opts = {});
Tensor randn(IntList shape, TensorOptions opts = {});
Tensor randint(int64_t low, int64_t high, IntList shape,
               TensorOptions opts = {});  // Int64 unless opts set a dtype
template <class T>
Tensor from_vector(const std::vector<T>& data, IntList shape, TensorOptions opts = {});
Tensor scalar_tensor(const Scalar& value, TensorOptions opts = {});
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);
Tensor full_like(const Tensor& t, const Scalar& value);
// manual_seed(uint64_t) is declared in runtime/philox.h

// ---- pointwise (ops/pointwise.cpp): broadcasting, PyTorch type promotion ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b);
Tensor rsub(const Tensor& a, const Scalar& b);  // b - a
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give Float32
Tensor div(const Tensor& a, const Scalar& b);
Tensor rdiv(const Tensor& a, const Scalar& b);  // b / a
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even, as torch.round
Tensor sign(const Tensor& x);
Tensor square(const Tensor& x);
Tensor pow(const Tensor& x, const Scalar& exponent);
Tensor pow(const Tensor& x, const Tensor& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor clamp(const Tensor& x, double lo, double hi);
Tensor gelu(const Tensor& x, const std::string& approximate = "none");  // "none" (erf) or "tanh"
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);
Tensor isnan(const Tensor& x);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);

// ---- reductions (ops/reduce.cpp); dims may be negative; an empty dims list means all dims ----
Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, IntList dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, IntList dims, bool keepdim = false);
Tensor prod(const Tensor& x);
Tensor prod(const Tensor& x, IntList dims, bool keepdim = false);
Tensor amax(const Tensor& x);
Tensor amax(const Tensor& x, IntList dims, bool keepdim = false);
Tensor amin(const Tensor& x);
Tensor amin(const Tensor& x, IntList dims, bool keepdim = false);
Tensor logsumexp(const Tensor& x);  // over every dim, as the other reductions' one-argument form
Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor var(const Tensor& x, IntList dims, bool unbiased = true, bool keepdim = false);
Tensor std(const Tensor& x, IntList dims, bool unbiased = true, bool keepdim = false);
Tensor all(const Tensor& x);
Tensor any(const Tensor& x);

// ---- linear algebra (ops/matmul.cpp) ----
Tensor matmul(const Tensor& a, const Tensor& b);  // as torch.matmul
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);

// ---- neural-network helpers (ops/nn.cpp) ----
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor layer_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = {});  // x @ w.t() + b
Tensor dropout(const Tensor& x, double p, bool train);
Tensor cross_entropy(const Tensor& logits, const Tensor& target);  // Int64 targets, mean
Tensor mse_loss(const Tensor& a, const Tensor& b);                 // mean
Tensor embedding(const Tensor& weight, const Tensor& indices);
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    bool is_causal = false);

// ---- shape and indexing (ops/shape.cpp, ops/index.cpp) ----
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor one_hot(const Tensor& index, int64_t num_classes);
Tensor tril(const Tensor& x, int64_t k = 0);
Tensor triu(const Tensor& x, int64_t k = 0);

// ---- files (ops/npy.cpp): NumPy .npy, interoperable with numpy.load / numpy.save ----
Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);

// ---- utilities ----
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
bool equal(const Tensor& a, const Tensor& b);  // same shape and exactly equal values
void sync();  // flush recorded work and wait for it (eager mode: nothing to do)

}  // namespace kiln
