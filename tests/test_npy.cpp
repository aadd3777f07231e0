// load_npy / save_npy against fixtures written once by NumPy 1.24 (tests/data/*.npy; the script
// that made them is described in tests/data/README.md). Values are compared exactly.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "kiln/kiln.h"

using namespace kiln;

namespace {

// KILN_TEST_DATA_DIR is the absolute path of tests/data (tests/CMakeLists.txt). Not __FILE__:
// ccache with base_dir rewrites it to a path relative to the build folder.
std::string data_path(const std::string& name) {
  return (std::filesystem::path(KILN_TEST_DATA_DIR) / name).string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A per-test temporary file, removed at the end of the test.
class NpyTmp : public ::testing::Test {
 protected:
  std::string tmp(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / "kiln_test_npy";
    std::filesystem::create_directories(dir);
    std::string p = (dir / (std::to_string(::getpid()) + "_" + name)).string();
    files_.push_back(p);
    return p;
  }
  void TearDown() override {
    for (auto& f : files_) std::filesystem::remove(f);
  }
  std::vector<std::string> files_;
};

void expect_npy_error(const std::string& file, const std::string& what) {
  std::string path = data_path(file);
  try {
    load_npy(path);
    ADD_FAILURE() << "load_npy(" << file << ") did not throw";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("load_npy"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

}  // namespace

TEST(NpyLoad, EveryDtype) {
  Tensor b = load_npy(data_path("bool_3.npy"));
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(b.sizes(), (Shape{3}));
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true}));

  Tensor i4 = load_npy(data_path("int32_2x3.npy"));
  EXPECT_EQ(i4.dtype(), kInt32);
  EXPECT_EQ(i4.sizes(), (Shape{2, 3}));
  EXPECT_EQ(i4.to_vector<int32_t>(),
            (std::vector<int32_t>{0, -1, 2, 2147483647, -2147483647 - 1, 5}));

  Tensor i8 = load_npy(data_path("int64_2x3.npy"));
  EXPECT_EQ(i8.dtype(), kInt64);
  EXPECT_EQ(i8.to_vector<int64_t>(),
            (std::vector<int64_t>{0, -1, 2, 9007199254740993LL, INT64_MIN, 5}));

  Tensor f4 = load_npy(data_path("float32_2x3.npy"));
  EXPECT_EQ(f4.dtype(), kFloat32);
  auto v4 = f4.to_vector<float>();
  EXPECT_EQ(v4[0], 0.5f);
  EXPECT_EQ(v4[1], -1.25f);
  EXPECT_EQ(v4[2], 3e10f);
  EXPECT_TRUE(std::isnan(v4[3]));
  EXPECT_EQ(v4[4], INFINITY);
  EXPECT_EQ(v4[5], 0.0f);
  EXPECT_TRUE(std::signbit(v4[5]));

  Tensor f8 = load_npy(data_path("float64_2x3.npy"));
  EXPECT_EQ(f8.dtype(), kFloat64);
  auto v8 = f8.to_vector<double>();
  EXPECT_EQ(v8[0], 0.1);
  EXPECT_EQ(v8[2], 1e300);
  EXPECT_TRUE(std::isnan(v8[3]));
  EXPECT_EQ(v8[4], -INFINITY);
  EXPECT_EQ(v8[5], 2.5e-310);  // subnormal survives
}

TEST(NpyLoad, FortranOrder) {
  Tensor t = load_npy(data_path("float32_fortran_2x3x4.npy"));
  EXPECT_EQ(t.sizes(), (Shape{2, 3, 4}));
  EXPECT_TRUE(t.is_contiguous());
  auto v = t.to_vector<float>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], float(i));  // logical value = row-major index

  Tensor u = load_npy(data_path("int64_fortran_3x2.npy"));
  EXPECT_EQ(u.sizes(), (Shape{3, 2}));
  EXPECT_EQ(u.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(NpyLoad, BigEndian) {
  Tensor f8 = load_npy(data_path("float64_be_2x3.npy"));
  EXPECT_EQ(f8.dtype(), kFloat64);
  EXPECT_EQ(f8.to_vector<double>(), (std::vector<double>{0.1, -1.25, 1e300, 2.0, -3.0, 4.5}));
  Tensor f4 = load_npy(data_path("float32_be_4.npy"));
  EXPECT_EQ(f4.to_vector<float>(), (std::vector<float>{0.5f, -1.25f, 3e10f, 7.0f}));
  Tensor i4 = load_npy(data_path("int32_be_3.npy"));
  EXPECT_EQ(i4.to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 65536}));
  Tensor i8 = load_npy(data_path("int64_be_3.npy"));
  EXPECT_EQ(i8.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 4294967296LL}));
  Tensor bf = load_npy(data_path("int32_be_fortran_2x3.npy"));
  EXPECT_EQ(bf.sizes(), (Shape{2, 3}));
  EXPECT_EQ(bf.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
}

TEST(NpyLoad, ZeroDimAndEmpty) {
  Tensor s = load_npy(data_path("scalar_f8.npy"));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.dtype(), kFloat64);
  EXPECT_EQ(s.item<double>(), 3.5);
  Tensor si = load_npy(data_path("scalar_i8.npy"));
  EXPECT_EQ(si.dim(), 0);
  EXPECT_EQ(si.item<int64_t>(), -7);
  Tensor e = load_npy(data_path("empty_f4_0.npy"));
  EXPECT_EQ(e.sizes(), (Shape{0}));
  EXPECT_EQ(e.dtype(), kFloat32);
  Tensor e3 = load_npy(data_path("empty_i8_2x0x3.npy"));
  EXPECT_EQ(e3.sizes(), (Shape{2, 0, 3}));
  EXPECT_EQ(e3.dtype(), kInt64);
}

TEST(NpyLoad, Versions2And3) {
  for (const char* f : {"v2_f4_2x3.npy", "v3_f4_2x3.npy"}) {
    Tensor t = load_npy(data_path(f));
    EXPECT_EQ(t.sizes(), (Shape{2, 3})) << f;
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5})) << f;
  }
}

TEST(NpyLoad, Errors) {
  expect_npy_error("unknown_c8.npy", "unsupported dtype '<c8'");
  expect_npy_error("unknown_u2.npy", "unsupported dtype '<u2'");
  expect_npy_error("unknown_object.npy", "unsupported dtype '|O'");
  expect_npy_error("unknown_structured.npy", "unsupported dtype");
  expect_npy_error("bad_magic.npy", "bad magic");
  expect_npy_error("truncated_header.npy", "truncated");
  expect_npy_error("truncated_data.npy", "truncated data");
  expect_npy_error("extra_data.npy", "size mismatch");
  expect_npy_error("shape_mismatch.npy", "truncated data");  // header (2, 4) but 6 floats
  expect_npy_error("does_not_exist.npy", "cannot open");
}

TEST_F(NpyTmp, MalformedHeaders) {
  // Build files with hand-written headers to reach each parser error.
  auto write = [&](const std::string& name, const std::string& header) {
    std::string p = tmp(name);
    std::ofstream f(p, std::ios::binary);
    std::string h = header + "\n";
    f.write("\x93NUMPY\x01\x00", 8);
    char len[2] = {char(h.size() & 0xff), char(h.size() >> 8)};
    f.write(len, 2);
    f.write(h.data(), static_cast<std::streamsize>(h.size()));
    return p;
  };
  auto check = [&](const std::string& p, const std::string& what) {
    try {
      load_npy(p);
      ADD_FAILURE() << "no throw for " << p;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("load_npy"), std::string::npos) << e.what();
    }
  };
  check(write("nokey.npy", "{'descr': '<f4', 'shape': (1,), }"), "lacks one of the keys");
  check(write("badbool.npy", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }"),
        "True or False");
  check(write("negshape.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
        "non-negative integer");
  check(write("extrakey.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}"),
        "unexpected key");
  check(write("badorder.npy", "{'descr': '!f4', 'fortran_order': False, 'shape': (), }"),
        "unsupported dtype '!f4'");
  // Corrupt shapes: rejected before allocating anything.
  check(
      write("huge.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000000,), }"),
      "truncated data");
  check(
      write("toolarge.npy",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, 1000000000000), }"),
      "too large");
  // Double-quoted strings and no trailing comma are valid Python too.
  std::string p = write("dq.npy", "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": ()}");
  {
    std::ofstream f(p, std::ios::binary | std::ios::app);
    int32_t v = 42;
    f.write(reinterpret_cast<const char*>(&v), 4);
  }
  EXPECT_EQ(load_npy(p).item<int32_t>(), 42);
}

// kiln's bytes equal numpy.save's bytes for the same array (checked once by hand in the other
// direction too: numpy.load reads kiln's files).
TEST_F(NpyTmp, SaveMatchesNumpyBytes) {
  struct Case {
    const char* ref;
    Tensor t;
  };
  std::vector<Case> cases = {
      {"save_ref_f4_2x3.npy", from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
      {"save_ref_i8_5.npy", arange(5)},
      {"save_ref_b1_2x2.npy", from_vector<bool>({true, false, false, true}, {2, 2})},
      {"save_ref_f8_scalar.npy", scalar_tensor(2.25, kFloat64)},
      {"save_ref_i4_0x3.npy", zeros({0, 3}, kInt32)},
      // A transposed (non-contiguous) view is written in its logical order.
      {"save_ref_f8_transposed_3x2.npy", from_vector<double>({0, 1, 2, 3, 4, 5}, {2, 3}).t()},
  };
  for (auto& c : cases) {
    std::string p = tmp(c.ref);
    save_npy(p, c.t);
    EXPECT_EQ(read_bytes(p), read_bytes(data_path(c.ref))) << c.ref;
  }
}

TEST_F(NpyTmp, RoundTripEveryDtype) {
  std::vector<Tensor> ts = {
      from_vector<bool>({true, false, true, true, false, false}, {3, 2}),
      from_vector<int32_t>({1, -2, 3, INT32_MAX, INT32_MIN, 0}, {2, 3}),
      from_vector<int64_t>({INT64_MAX, INT64_MIN, 0, 1, -1, 7}, {6}),
      from_vector<float>({0.5f, NAN, INFINITY, -0.0f, 1e-40f, 3.f}, {1, 2, 3}),
      from_vector<double>({0.1, -INFINITY, 1e308, 4.9e-324, 2, 3}, {3, 1, 2}),
      scalar_tensor(7),
      zeros({0}),
      zeros({4, 0, 2}, kFloat64),
      // sliced, strided view
      arange(0, 24, 1, kFloat32).view({4, 6}).slice(1, 1, 6, 2),
  };
  for (size_t i = 0; i < ts.size(); ++i) {
    std::string p = tmp("rt" + std::to_string(i) + ".npy");
    save_npy(p, ts[i]);
    Tensor back = load_npy(p);
    EXPECT_EQ(back.sizes(), ts[i].sizes()) << i;
    EXPECT_EQ(back.dtype(), ts[i].dtype()) << i;
    // Bitwise comparison (NaN payloads and -0.0 included) through the raw bytes.
    Tensor c = ts[i].contiguous();
    size_t n = static_cast<size_t>(c.numel()) *
               (c.dtype() == kBool ? 1 : (c.dtype() == kInt32 || c.dtype() == kFloat32 ? 4 : 8));
    if (n) {
      EXPECT_EQ(std::memcmp(back.raw_data(), c.raw_data(), n), 0) << i;
    }
  }
}

TEST_F(NpyTmp, SaveErrors) {
  EXPECT_THROW(
      {
        try {
          save_npy("/nonexistent_dir_kiln/x.npy", zeros({2}));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("save_npy"), std::string::npos);
          EXPECT_NE(std::string(e.what()).find("/nonexistent_dir_kiln/x.npy"), std::string::npos);
          throw;
        }
      },
      Error);
  EXPECT_THROW(save_npy(tmp("u.npy"), Tensor()), Error);
}
