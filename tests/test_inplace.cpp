// In-place ops (dispatch_into): values, casting of the result into self, the version counter,
// overlapping operands, and the errors PyTorch raises (uncastable result, shape change,
// expanded self, undefined tensors).
#include "core_test_util.h"

using namespace kiln;
using namespace kiln::testutil;

namespace {
Tensor mat3(DType d = kFloat32) { return make({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, d); }
}  // namespace

TEST(InPlace, ValuesAndReturnSelf) {
  Tensor x = mat3();
  Tensor& r = x.add_(make({10, 20, 30}, {3}, kFloat32));  // broadcast other
  EXPECT_EQ(&r, &x);
  EXPECT_EQ(values(x), (std::vector<double>{11, 22, 33, 14, 25, 36, 17, 28, 39}));
  x.sub_(mat3(), 2);
  EXPECT_EQ(values(x), (std::vector<double>{9, 18, 27, 6, 15, 24, 3, 12, 21}));
  x.div_(make({3}, {}, kFloat32)).mul_(2).add_(-1).sub_(1);
  EXPECT_EQ(values(x), (std::vector<double>{4, 10, 16, 2, 8, 14, 0, 6, 12}));
  x.clamp_(1.5, 9);
  EXPECT_EQ(values(x), (std::vector<double>{4, 9, 9, 2, 8, 9, 1.5, 6, 9}));
  x -= 5;
  x.relu_();
  EXPECT_EQ(values(x), (std::vector<double>{0, 4, 4, 0, 3, 4, 0, 1, 4}));
  x.masked_fill_(make({1, 0, 0}, {3}, kBool), -7);
  EXPECT_EQ(values(x), (std::vector<double>{-7, 4, 4, -7, 3, 4, -7, 1, 4}));
  x *= make({2}, {}, kFloat32);
  x /= 2.0;
  x += x;
  EXPECT_EQ(values(x), (std::vector<double>{-14, 8, 8, -14, 6, 8, -14, 2, 8}));
  x.fill_(2.5);
  EXPECT_EQ(values(x), std::vector<double>(9, 2.5));
  x.zero_();
  EXPECT_EQ(values(x), std::vector<double>(9, 0));
}

TEST(InPlace, NonContiguousSelf) {
  Tensor x = mat3();
  x.t().add_(make({100, 200, 300}, {3}, kFloat32));  // adds 100*(row index + 1) to x's rows
  EXPECT_EQ(values(x), (std::vector<double>{101, 102, 103, 204, 205, 206, 307, 308, 309}));
  Tensor y = mat3();
  y.slice(1, 0, 3, 2).mul_(-1);
  EXPECT_EQ(values(y), (std::vector<double>{-1, 2, -3, -4, 5, -6, -7, 8, -9}));
  Tensor z = mat3(kInt64);
  z.select(1, 1).fill_(0);
  z.t()[2].copy_(make({7, 7, 7}, {3}, kInt64));
  EXPECT_EQ(values(z), (std::vector<double>{1, 0, 7, 4, 0, 7, 7, 0, 7}));
}

TEST(InPlace, ResultCastIntoSelf) {
  Tensor f = make({1, 2}, {2}, kFloat32);
  f.add_(make({0.1, 0.2}, {2}, kFloat64));  // Float64 result cast back into Float32
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(values(f)[0], static_cast<double>(static_cast<float>(1 + 0.1)));
  Tensor i = make({1, 2}, {2}, kInt32);
  i.add_(make({5, 6}, {2}, kInt64));
  i.mul_(3);
  EXPECT_EQ(i.dtype(), kInt32);
  EXPECT_EQ(values(i), (std::vector<double>{18, 24}));
  i.clamp_(19, 30);  // whole bounds keep an Int32 clamp_ integral
  EXPECT_EQ(values(i), (std::vector<double>{19, 24}));
  Tensor b = make({1, 0}, {2}, kBool);
  b.add_(true);
  EXPECT_EQ(values(b), (std::vector<double>{1, 1}));
  Tensor d = make({1.5, 2.5}, {2}, kFloat64);
  d.copy_(make({3, 4}, {2}, kInt32));  // copy_ casts any dtype
  EXPECT_EQ(values(d), (std::vector<double>{3, 4}));
  Tensor k = make({0, 0}, {2}, kInt32);
  k.copy_(make({-2.7, 2.7}, {2}, kFloat32));
  EXPECT_EQ(values(k), (std::vector<double>{-2, 2}));
}

TEST(InPlace, Errors) {
  Tensor i = make({1, 2}, {2}, kInt32);
  uint32_t v = i.version();
  expect_error([&] { i.add_(1.5); }, {"add", "Float32", "Int32"});
  expect_error([&] { i.div_(2); }, {"div", "Float32", "Int32"});
  expect_error([&] { i.add_(make({1.5}, {}, kFloat64)); }, {"add", "Int32"});
  expect_error([&] { i.clamp_(0.5, 3); }, {"clamp", "Int32"});
  expect_error([&] { i.add_(make({1}, {1}, kFloat32), 2); }, {"add", "Int32"});
  EXPECT_EQ(values(i), (std::vector<double>{1, 2}));
  EXPECT_EQ(i.version(), v);  // a rejected in-place op writes nothing
  Tensor b = make({1, 0}, {2}, kBool);
  expect_error([&] { b.add_(make({1, 2}, {2}, kInt32)); }, {"add", "Int32", "Bool"});
  expect_error([&] { b.sub_(b); }, {"sub", "Bool"});
  Tensor x = make({1, 2, 3}, {3}, kFloat32);
  expect_error([&] { x.add_(mat3()); }, {"add", "[3, 3]", "[3]"});
  expect_error([&] { x.mul_(make({1, 2}, {2}, kFloat32)); }, {"mul", "[3]", "[2]"});
  expect_error([&] { x.copy_(make({1, 2}, {2}, kFloat32)); }, {"copy_", "[2]", "[3]"});
  Tensor e = make({1, 2, 3}, {3}, kFloat32).expand({2, 3});
  expect_error([&] { e.add_(1); }, {"add", "expanded"});
  expect_error([&] { e.fill_(1); }, {"expanded"});
  expect_error([&] { e.copy_(mat3().slice(0, 0, 2)); }, {"expanded"});
  Tensor u;
  expect_error([&] { x.add_(u); }, {"add", "undefined"});
  expect_error([&] { u.add_(x); }, {"undefined"});
  expect_error([&] { x.copy_(u); }, {"copy", "undefined"});
  expect_error([&] { x.masked_fill_(make({1, 0, 1}, {3}, kInt32), 0); }, {"masked_fill", "Bool"});
  expect_error(
      [&] {
        x.masked_fill_(make({1, 0, 1, 1, 1, 1}, {2, 3}, kBool), 0);
      },
      {"masked_fill", "[2, 3]"});
}

TEST(InPlace, VersionCounter) {
  Tensor x = mat3();
  Tensor view = x.t()[1];
  const std::vector<std::pair<const char*, std::function<void()>>> ops = {
      {"add_", [&] { x.add_(x); }},
      {"sub_", [&] { x.sub_(x, 2); }},
      {"mul_", [&] { x.mul_(x); }},
      {"div_", [&] { x.div_(mat3()); }},
      {"add_s", [&] { x.add_(1); }},
      {"sub_s", [&] { x.sub_(1); }},
      {"mul_s", [&] { x.mul_(2); }},
      {"div_s", [&] { x.div_(2); }},
      {"zero_", [&] { x.zero_(); }},
      {"fill_", [&] { x.fill_(1); }},
      {"copy_", [&] { x.copy_(mat3()); }},
      {"clamp_", [&] { x.clamp_(0, 1); }},
      {"relu_", [&] { x.relu_(); }},
      {"masked_fill_", [&] { x.masked_fill_(make({1}, {}, kBool), 2); }},
      {"+=", [&] { x += 1; }},
      {"-=", [&] { x -= x; }},
      {"*=", [&] { x *= 3; }},
      {"/=", [&] { x /= mat3(); }},
      {"view.add_", [&] { view.add_(1); }},
  };
  for (const auto& [name, op] : ops) {
    uint32_t before = x.version();
    EXPECT_EQ(view.version(), before) << name;
    op();
    EXPECT_GT(x.version(), before) << name;
    EXPECT_EQ(view.version(), x.version()) << name;
  }
  // Out-of-place ops and views do not bump.
  uint32_t v = x.version();
  Tensor y = x + x;
  Tensor w = x.t().reshape({9});
  (void)exp(view);
  EXPECT_EQ(x.version(), v);
  EXPECT_EQ(y.version(), 0u);
}

TEST(InPlace, OverlappingOperands) {
  // copy_ from the transpose of self gives the transpose.
  for (DType d : {kFloat32, kInt64, kFloat64}) {
    Tensor x = mat3(d);
    x.copy_(x.t());
    EXPECT_EQ(values(x), (std::vector<double>{1, 4, 7, 2, 5, 8, 3, 6, 9})) << dname(d);
  }
  // ... also with a dtype cast on the way.
  Tensor xc = mat3(kFloat64);
  Tensor xi = xc.to(kInt32);
  xc.copy_(xc.t().to(kInt32));
  EXPECT_EQ(values(xc), (std::vector<double>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
  // x.add_(x[0]): row 0 is read for every row, including after row 0 was updated.
  Tensor a = mat3();
  a.add_(a[0]);
  EXPECT_EQ(values(a), (std::vector<double>{2, 4, 6, 5, 7, 9, 8, 10, 12}));
  // a.mul_(a.t()): every product uses the old values.
  Tensor m = mat3();
  m.mul_(m.t());
  EXPECT_EQ(values(m), (std::vector<double>{1, 8, 21, 8, 25, 48, 21, 48, 81}));
  // Shifting a slice onto an overlapping slice of the same storage.
  Tensor s = make({1, 2, 3, 4, 5}, {5}, kFloat32);
  s.slice(0, 1, 5).copy_(s.slice(0, 0, 4));
  EXPECT_EQ(values(s), (std::vector<double>{1, 1, 2, 3, 4}));
  Tensor s2 = make({1, 2, 3, 4, 5}, {5}, kFloat32);
  s2.slice(0, 0, 4).add_(s2.slice(0, 1, 5));
  EXPECT_EQ(values(s2), (std::vector<double>{3, 5, 7, 9, 5}));
  // Broadcast copy_ from a row and from a 0-dim tensor.
  Tensor c = mat3(kInt32);
  c.copy_(make({7, 8, 9}, {3}, kFloat32));
  EXPECT_EQ(values(c), (std::vector<double>{7, 8, 9, 7, 8, 9, 7, 8, 9}));
  c.copy_(make({-1}, {}, kInt64));
  EXPECT_EQ(values(c), std::vector<double>(9, -1));
  // where/masked_fill into self with the mask derived from self.
  Tensor w = mat3();
  w.masked_fill_(w > 4, 0);
  EXPECT_EQ(values(w), (std::vector<double>{1, 2, 3, 4, 0, 0, 0, 0, 0}));
  // Zero-size in-place ops are no-ops that still validate.
  Tensor z = make({}, {0, 3}, kFloat32);
  z.add_(make({1, 2, 3}, {3}, kFloat32));
  EXPECT_EQ(z.sizes(), (Shape{0, 3}));
  expect_error([&] { z.add_(make({1, 2}, {2}, kFloat32)); }, {"add"});
}
