// Views alias their base (writes through either are seen by the other), reshape copies only when
// it must, contiguous/clone/to behave as in PyTorch, and every view op rejects bad arguments
// with a message naming the op.
#include "core_test_util.h"
#include "ops/cpu/elementwise_loop.h"

using namespace kiln;
using namespace kiln::testutil;

namespace {

// [2, 3, 4] holding 1..24.
Tensor base24() {
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i + 1;
  return make(v, {2, 3, 4}, kFloat32);
}

struct ViewCase {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
};

std::vector<ViewCase> view_cases() {
  return {
      {"view",
       [](const Tensor& x) {
         return x.view({6, 4});
       }},
      {"view-1", [](const Tensor& x) { return x.view({-1}); }},
      {"reshape",
       [](const Tensor& x) {
         return x.reshape({4, 6});
       }},
      {"transpose", [](const Tensor& x) { return x.transpose(0, 2); }},
      {"permute",
       [](const Tensor& x) {
         return x.permute({2, 0, 1});
       }},
      {"slice_step", [](const Tensor& x) { return x.slice(2, 1, 4, 2); }},
      {"slice_neg", [](const Tensor& x) { return x.slice(1, -2, 100); }},
      {"select", [](const Tensor& x) { return x.select(1, 1); }},
      {"select_neg", [](const Tensor& x) { return x.select(-1, -1); }},
      {"narrow", [](const Tensor& x) { return x.narrow(2, 1, 2); }},
      {"unsqueeze", [](const Tensor& x) { return x.unsqueeze(1); }},
      {"squeeze", [](const Tensor& x) { return x.unsqueeze(3).squeeze(3); }},
      {"squeeze_all", [](const Tensor& x) { return x.select(0, 1).unsqueeze(0).squeeze(); }},
      {"flatten", [](const Tensor& x) { return x.flatten(); }},
      {"flatten1", [](const Tensor& x) { return x.flatten(1); }},
      {"index", [](const Tensor& x) { return x[1]; }},
      {"chain", [](const Tensor& x) { return x.transpose(1, 2)[0].slice(1, 0, 3, 2).t(); }},
      {"reshape_of_transposed_viewable",
       [](const Tensor& x) {
         return x.transpose(0, 1).reshape({3, 2, 2, 2});
       }},
  };
}

}  // namespace

TEST(Views, WritesThroughViewAreSeenByBase) {
  for (const ViewCase& c : view_cases()) {
    Tensor x = base24();
    Tensor v = c.fn(x);
    EXPECT_TRUE(v.is_same_storage(x)) << c.name;
    std::vector<double> ids = values(v);  // base values are 1-based positions
    uint32_t ver = x.version();
    v.mul_(-1);
    EXPECT_GT(x.version(), ver) << c.name;
    std::vector<double> got = values(x);
    for (int p = 0; p < 24; ++p) {
      bool in = std::find(ids.begin(), ids.end(), p + 1) != ids.end();
      EXPECT_EQ(got[p], in ? -(p + 1) : p + 1) << c.name << " position " << p;
    }
  }
}

TEST(Views, WritesThroughBaseAreSeenByView) {
  for (const ViewCase& c : view_cases()) {
    Tensor x = base24();
    Tensor v = c.fn(x);
    std::vector<double> before = values(v);
    x.add_(100);
    std::vector<double> after = values(v);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i], before[i] + 100) << c.name;
  }
}

TEST(Views, ReadsMatchReference) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, kInt64);
  EXPECT_EQ(values(x.t()), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values(x.permute({1, 0})), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values(x.slice(1, 0, 3, 2)), (std::vector<double>{1, 3, 4, 6}));
  EXPECT_EQ(values(x.slice(1, 1, 3, 5)), (std::vector<double>{2, 5}));
  EXPECT_EQ(x.slice(1, 3, 1).sizes(), (Shape{2, 0}));
  EXPECT_EQ(values(x.select(1, 2)), (std::vector<double>{3, 6}));
  EXPECT_EQ(values(x[1]), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(values(x[-2]), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(x[1][2].dim(), 0);
  EXPECT_EQ(x[1][2].item<int64_t>(), 6);
  EXPECT_EQ(values(x.narrow(1, 1, 2)), (std::vector<double>{2, 3, 5, 6}));
  EXPECT_EQ(values(x.narrow(1, -1, 1)), (std::vector<double>{3, 6}));
  EXPECT_EQ(values(x.view({3, 2})), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(x.unsqueeze(0).sizes(), (Shape{1, 2, 3}));
  EXPECT_EQ(x.unsqueeze(-1).sizes(), (Shape{2, 3, 1}));
  EXPECT_EQ(x.unsqueeze(1).sizes(), (Shape{2, 1, 3}));
  EXPECT_EQ(x.unsqueeze(0).squeeze(0).sizes(), (Shape{2, 3}));
  EXPECT_EQ(x.squeeze(0).sizes(), (Shape{2, 3}));  // not size 1: unchanged
  Tensor e = make({1, 2}, {2, 1}, kInt64).expand({2, 3});
  EXPECT_EQ(values(e), (std::vector<double>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(e.strides(), (Shape{1, 0}));
  EXPECT_EQ(values(make({7}, {}, kInt64).expand({2, 2})), (std::vector<double>(4, 7)));
  EXPECT_EQ(make({1, 2}, {2, 1}, kInt64).expand({3, -1, 0}).sizes(), (Shape{3, 2, 0}));
  // 0-dim tensors view as [1] and back; flatten gives [1].
  Tensor s = make({5}, {}, kFloat32);
  EXPECT_EQ(s.view({1}).sizes(), (Shape{1}));
  EXPECT_EQ(s.reshape({1, 1}).sizes(), (Shape{1, 1}));
  EXPECT_EQ(s.flatten().sizes(), (Shape{1}));
  EXPECT_EQ(s.view({1}).view({}).dim(), 0);
  EXPECT_EQ(s.unsqueeze(0).sizes(), (Shape{1}));
  EXPECT_EQ(s.squeeze().dim(), 0);
  // Zero-size views.
  Tensor z = make({}, {0, 3}, kFloat32);
  EXPECT_EQ(z.view({3, 0}).sizes(), (Shape{3, 0}));
  EXPECT_EQ(z.reshape({-1, 3}).sizes(), (Shape{0, 3}));
  EXPECT_EQ(z.t().sizes(), (Shape{3, 0}));
}

TEST(Views, ReshapeCopiesOnlyWhenItMust) {
  Tensor x = base24();
  Tensor r = x.transpose(0, 2).reshape({24});  // not viewable: a copy
  EXPECT_FALSE(r.is_same_storage(x));
  EXPECT_EQ(values(r), values(x.transpose(0, 2).contiguous()));
  r.fill_(0);
  EXPECT_EQ(values(x)[0], 1);
  EXPECT_TRUE(x.reshape({4, 6}).is_same_storage(x));
  EXPECT_TRUE(x.transpose(0, 1).reshape({3, 2, 4}).is_same_storage(x));
  EXPECT_FALSE(x.transpose(1, 2).flatten().is_same_storage(x));
}

TEST(Views, ContiguousCloneAndTo) {
  Tensor x = base24();
  Tensor c = x.contiguous();
  EXPECT_EQ(c.impl(), x.impl());  // returns self when contiguous
  Tensor t = x.transpose(0, 1);
  EXPECT_FALSE(t.is_contiguous());
  Tensor tc = t.contiguous();
  EXPECT_TRUE(tc.is_contiguous());
  EXPECT_FALSE(tc.is_same_storage(x));
  EXPECT_EQ(values(tc), values(t));
  Tensor k = x.clone();
  EXPECT_FALSE(k.is_same_storage(x));
  k.fill_(3);
  EXPECT_EQ(values(x)[5], 6);
  EXPECT_EQ(values(t.clone()), values(t));
  EXPECT_TRUE(t.clone().is_contiguous());
  EXPECT_EQ(x.to(kFloat32).impl(), x.impl());  // same dtype: no copy

  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor f = make({-2.7, -0.5, 0.5, 2.7, 1e3, -0.0}, {6}, kFloat64);
  EXPECT_EQ(values(f.to(kInt32)), (std::vector<double>{-2, 0, 0, 2, 1000, 0}));
  EXPECT_EQ(values(f.to(kInt64)), (std::vector<double>{-2, 0, 0, 2, 1000, 0}));
  EXPECT_EQ(values(f.to(kBool)), (std::vector<double>{1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(values(make({nan, 0.0, 1e-30}, {3}, kFloat32).to(kBool)),
            (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(values(make({0, 3, -1}, {3}, kInt32).to(kBool)), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(values(make({1, 0}, {2}, kBool).to(kFloat64)), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(make({16777217}, {1}, kInt64).to(kFloat32)), (std::vector<double>{16777216}));
  EXPECT_EQ(values(make({0.1}, {1}, kFloat64).to(kFloat32))[0],
            static_cast<double>(static_cast<float>(0.1)));
  EXPECT_EQ(values(make({3000000000.0}, {1}, kInt64).to(kInt32))[0],
            static_cast<double>(static_cast<int32_t>(int64_t(3000000000))));  // wraps
  // to() of a non-contiguous tensor reads it logically.
  EXPECT_EQ(values(t.to(kInt64)), values(t));
  EXPECT_TRUE(t.to(kInt64).is_contiguous());
}

// Copies, casts and sums of transposed inputs large enough for ElementwiseLoop's tiles (the
// input's innermost stride a line or more): every element where the index map puts it, with
// partial tiles in both dims, outer dims, 4- and 8-byte types, and a contiguous operand beside.
TEST(Views, TransposedInputsInTilesMatchTheIndexMap) {
  const int64_t A = 3, B = 2 * ElementwiseLoop::kTileRows + 37,
                C = 3 * ElementwiseLoop::kTileCols + 5;
  for (DType dt : {kFloat32, kFloat64, kInt32, kInt64}) {
    const Tensor x = arange(A * B * C, dtype(kInt64)).to(dt).view({A, B, C});
    const Tensor p = x.permute({0, 2, 1});  // [A, C, B]: its innermost stride is C elements
    const Tensor pc = p.contiguous();
    const Tensor pd = p.to(dt == kFloat64 ? kFloat32 : kFloat64);
    const Tensor ps = p + pc;
    const Tensor t2 = x.select(0, 1).t().contiguous();  // [C, B] of a 2-D transpose
    const std::vector<double> vc = values(pc), vd = values(pd), vs = values(ps), v2 = values(t2);
    ASSERT_TRUE(pc.is_contiguous());
    for (int64_t a = 0; a < A; ++a)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t b = 0; b < B; ++b) {
          const double want = static_cast<double>((a * B + b) * C + c);
          const size_t i = static_cast<size_t>((a * C + c) * B + b);
          const std::string what = fmt::format("{} [{}, {}, {}]", dtype_name(dt), a, c, b);
          ASSERT_EQ(vc[i], want) << what;
          ASSERT_EQ(vd[i], want) << what;
          ASSERT_EQ(vs[i], 2 * want) << what;
          if (a == 1) {
            ASSERT_EQ(v2[static_cast<size_t>(c * B + b)], want) << what;
          }
        }
  }
}

TEST(Views, Errors) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat32);
  expect_error([&] { x.t().view({6}); }, {"view", "reshape"});
  expect_error([&] { x.view({4, 2}); }, {"view", "[4, 2]", "[2, 3]"});
  expect_error([&] { x.view({-1, -1}); }, {"view", "-1"});
  expect_error([&] { x.view({-2, -3}); }, {"view", "-2"});
  expect_error([&] { x.reshape({5}); }, {"reshape", "[5]", "[2, 3]"});
  expect_error([&] { x.transpose(0, 2); }, {"transpose", "2"});
  expect_error([&] { x.transpose(-3, 0); }, {"transpose", "-3"});
  expect_error([&] { x.permute({0}); }, {"permute"});
  expect_error([&] { x.permute({0, 0}); }, {"permute", "more than once"});
  expect_error([&] { x.permute({0, 2}); }, {"permute", "2"});
  expect_error([&] { x.slice(2, 0, 1); }, {"slice", "2"});
  expect_error([&] { x.slice(1, 0, 3, 0); }, {"slice", "step"});
  expect_error([&] { x.slice(1, 0, 3, -1); }, {"slice", "step"});
  expect_error([&] { x.select(0, 2); }, {"select", "2"});
  expect_error([&] { x.select(0, -3); }, {"select", "-3"});
  expect_error([&] { x.select(2, 0); }, {"select", "2"});
  expect_error([&] { x[2]; }, {"select", "2"});
  expect_error([&] { x.narrow(1, 2, 2); }, {"narrow", "2"});
  expect_error([&] { x.narrow(1, 0, -1); }, {"narrow"});
  expect_error([&] { x.narrow(1, -4, 1); }, {"narrow"});
  expect_error([&] { x.narrow(3, 0, 1); }, {"narrow", "3"});
  expect_error([&] { x.unsqueeze(3); }, {"unsqueeze", "3"});
  expect_error([&] { x.unsqueeze(-4); }, {"unsqueeze", "-4"});
  expect_error([&] { x.squeeze(2); }, {"squeeze", "2"});
  expect_error([&] { x.expand({3, 3}); }, {"expand", "[2, 3]", "[3, 3]"});
  expect_error([&] { x.expand({3}); }, {"expand", "[3]"});
  expect_error([&] { x.expand({-1, 2, 3}); }, {"expand", "-1"});
  expect_error([&] { make({1}, {1}, kFloat32).expand({-2}); }, {"expand", "-2"});
  expect_error([&] { x.flatten(1, 0); }, {"flatten"});
  expect_error([&] { x.flatten(0, 2); }, {"flatten", "2"});
  expect_error([&] { base24().t(); }, {"t", "[2, 3, 4]"});
  expect_error([&] { x.size(2); }, {"size", "2"});
  Tensor s = make({1}, {}, kFloat32);
  expect_error([&] { s.squeeze(5); }, {"squeeze", "5"});
  expect_error([&] { s.select(0, 0); }, {"select", "0-dim"});
  expect_error([&] { s.slice(0, 0, 1); }, {"slice", "0-dim"});
  expect_error([&] { s.unsqueeze(2); }, {"unsqueeze", "2"});
  expect_error([&] { s.view({2}); }, {"view", "[2]"});
  Tensor u;
  expect_error([&] { u.view({1}); }, {"undefined"});
  expect_error([&] { u.reshape({1}); }, {"undefined"});
  expect_error([&] { u.transpose(0, 1); }, {"undefined"});
  expect_error([&] { u.contiguous(); }, {"undefined"});
}
