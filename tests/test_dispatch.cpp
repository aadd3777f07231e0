// The runtime core under the ops: SmallVector, TensorImpl geometry helpers, op names, and the
// dispatcher's mode hook (meta runs, and validates, before any mode sees the call).
#include "core_test_util.h"
#include "runtime/dispatcher.h"
#include "runtime/small_vector.h"

using namespace kiln;
using namespace kiln::testutil;

TEST(SmallVector, InlineHeapCopyMoveInsertErase) {
  SmallVector<int64_t, 2> v;
  EXPECT_TRUE(v.empty());
  for (int64_t i = 0; i < 5; ++i) v.push_back(i);  // grows past the inline capacity
  EXPECT_EQ(v.vec(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  v.insert(0, 9);
  v.insert(6, 8);
  v.erase(1);
  EXPECT_EQ(v.vec(), (std::vector<int64_t>{9, 1, 2, 3, 4, 8}));
  SmallVector<int64_t, 2> c = v;  // copy of a heap vector
  c[0] = -1;
  EXPECT_EQ(v[0], 9);
  SmallVector<int64_t, 2> m = std::move(c);  // move steals the heap block
  EXPECT_EQ(m.vec(), (std::vector<int64_t>{-1, 1, 2, 3, 4, 8}));
  EXPECT_TRUE(c.empty());
  SmallVector<int64_t, 2> small{7};
  m = std::move(small);  // heap <- inline
  EXPECT_EQ(m.vec(), (std::vector<int64_t>{7}));
  m = m;  // self-assignment keeps the contents
  EXPECT_EQ(m.size(), 1u);
  m.resize(4, 3);
  EXPECT_EQ(m.vec(), (std::vector<int64_t>{7, 3, 3, 3}));
  m.resize(2);
  EXPECT_EQ(m.vec(), (std::vector<int64_t>{7, 3}));
  EXPECT_TRUE(m == (SmallVector<int64_t, 2>{7, 3}));
  EXPECT_FALSE(m == (SmallVector<int64_t, 2>{7, 3, 1}));
  m.assign(5, 1);
  EXPECT_EQ(m.vec(), std::vector<int64_t>(5, 1));
  m.pop_back();
  EXPECT_EQ(m.back(), 1);
  EXPECT_EQ(m.size(), 4u);
}

TEST(TensorImpl, Geometry) {
  EXPECT_EQ(contiguous_strides(DimVector{2, 3, 4}).vec(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(contiguous_strides(DimVector{2, 0, 4}).vec(), (std::vector<int64_t>{4, 4, 1}));
  EXPECT_EQ(contiguous_strides(DimVector{}).size(), 0u);
  EXPECT_TRUE(is_contiguous_layout(DimVector{2, 1, 3}, DimVector{3, 99, 1}));  // size-1: any
  EXPECT_FALSE(is_contiguous_layout(DimVector{2, 3}, DimVector{1, 2}));
  EXPECT_TRUE(is_contiguous_layout(DimVector{2, 0}, DimVector{5, 7}));  // empty: trivially
  EXPECT_EQ(numel_of(DimVector{}), 1);
  EXPECT_EQ(numel_of(DimVector{3, 0}), 0);
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat32);
  EXPECT_EQ(x.strides(), (Shape{3, 1}));
  EXPECT_EQ(x.t().strides(), (Shape{1, 3}));
  EXPECT_EQ(x.slice(1, 1, 3).storage_offset(), 1);
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_EQ(x.stride(0), 3);
  Tensor u;
  EXPECT_FALSE(u.defined());
  expect_error([&] { u.sizes(); }, {"undefined"});
  expect_error([&] { u.numel(); }, {"undefined"});
}

TEST(Dispatch, OpNamesAreSnakeCase) {
  EXPECT_STREQ(op_name(OpId::Add), "add");
  EXPECT_STREQ(op_name(OpId::LogSoftmax), "log_softmax");
  EXPECT_STREQ(op_name(OpId::GeluTanh), "gelu_tanh");
  EXPECT_STREQ(op_name(OpId::MaskedFill), "masked_fill");
  EXPECT_STREQ(op_def(OpId::Cast).name, "to");
  EXPECT_STREQ(op_id_name(OpId::LogSoftmax), "LogSoftmax");
}

namespace {
// Records every call and runs it eagerly, as the recorder's fallback would.
class RecordingMode : public ModeHandler {
 public:
  std::vector<std::string> seen;
  Tensor handle(const OpDef& def, const OpCall& call, OutputMeta& meta) override {
    seen.push_back(def.name);
    return run_eager(def, call, meta);
  }
  void handle_into(const OpDef& def, const OpCall& call, OutputMeta& meta, Tensor& out) override {
    seen.push_back(std::string(def.name) + "_");
    Tensor tmp = run_eager(def, call, meta);
    set_current_mode(nullptr);
    out.copy_(tmp);
    set_current_mode(this);
  }
};
}  // namespace

TEST(Dispatch, ModeHandlerSeesValidatedCalls) {
  RecordingMode mode;
  Tensor a = make({1, 2, 3}, {3}, kFloat32);
  set_current_mode(&mode);
  Tensor b = exp(a) + a;
  a.mul_(2);
  bool threw = false;
  try {
    add(a, make({1, 2}, {2}, kFloat32));  // meta rejects it before the mode sees it
  } catch (const Error&) {
    threw = true;
  }
  set_current_mode(nullptr);
  EXPECT_TRUE(threw);
  EXPECT_EQ(mode.seen, (std::vector<std::string>{"exp", "add", "mul_"}));
  EXPECT_EQ(values(a), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(current_mode(), nullptr);
}
