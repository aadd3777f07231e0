// OpInfo-style execution modes for the dtype x layout op matrices (docs/testing.md, "Op matrices").
//
// A matrix case calls its op through run_in_all_modes(what, fn) instead of calling it directly:
// fn runs eagerly (recording off, whatever KILN_JIT says), that result is returned for the case to
// compare with its reference, and fn runs again in every registered ExecMode, whose result must
// compare with eager's by that mode's rule. The built-in mode is "recorded" (KILN_JIT=1: the op is
// recorded into a graph and interpreted), and its rule is EQUAL BYTES (same dtype, sizes and
// element bytes, NaN payloads and signed zeros included): recording must not change a single bit
// (docs/tracer.md). A later execution mode (a compiling JIT backend, say) plugs in by adding an
// ExecMode to exec_modes() with its own compare rule, e.g. expect_within_ulps(n).
//
// Errors: if eager throws a kiln::Error, every mode must throw one with the same message (checked
// here), and the eager error is rethrown to the case.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "record_util.h"

namespace kiln::testing {

using OpThunk = std::function<Tensor()>;
// Fails the running test if `got` (the mode's result) is not acceptable for `want` (eager's).
using CompareFn =
    std::function<void(const Tensor& want, const Tensor& got, const std::string& what)>;

struct ExecMode {
  std::string name;
  // Runs fn in the mode and returns its result, materialized (no work pending).
  std::function<Tensor(const OpThunk&)> run;
  CompareFn compare;
};

// Equal dtype, sizes and row-major element bytes.
inline void expect_equal_bytes(const Tensor& want, const Tensor& got, const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  EXPECT_TRUE(bytes_of(want) == bytes_of(got))
      << what << ": bytes differ from eager\n  eager:    " << want << "\n  recorded: " << got;
}

// A bound for modes that may reorder or fuse arithmetic: floats within `ulps` units in the last
// place of the eager value (NaN where eager has NaN, infinities equal), other dtypes equal.
inline CompareFn expect_within_ulps(double ulps) {
  return [ulps](const Tensor& want, const Tensor& got, const std::string& what) {
    ASSERT_EQ(want.dtype(), got.dtype()) << what;
    ASSERT_EQ(want.sizes(), got.sizes()) << what;
    if (!is_floating(want.dtype())) return expect_equal_bytes(want, got, what);
    const std::vector<double> a = want.to(kFloat64).to_vector<double>();
    const std::vector<double> b = got.to(kFloat64).to_vector<double>();
    const double eps = want.dtype() == kFloat32 ? 0x1p-23 : 0x1p-52;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i]) || std::isinf(a[i])) {
        EXPECT_TRUE(std::isnan(a[i]) ? std::isnan(b[i]) : a[i] == b[i]) << what << " at " << i;
      } else {
        EXPECT_LE(std::abs(a[i] - b[i]), ulps * eps * std::abs(a[i])) << what << " at " << i;
      }
    }
  };
}

// KILN_JIT=1: record fn's ops, flush (interpret) them, compare bytes with eager.
inline ExecMode recorded_mode() {
  return {"recorded",
          [](const OpThunk& fn) {
            Tensor out;
            {
              JitMode on(true);  // flushes what fn recorded when the scope ends
              out = fn();
            }
            return out;
          },
          expect_equal_bytes};
}

// The modes every matrix case runs in besides eager. Tests may push_back a mode (and pop it).
inline std::vector<ExecMode>& exec_modes() {
  static std::vector<ExecMode> modes = {recorded_mode()};
  return modes;
}

// Runs fn eagerly and in every mode of exec_modes(); returns the eager result.
inline Tensor run_in_all_modes(const std::string& what, const OpThunk& fn) {
  Tensor eager;
  std::string eager_error;
  {
    JitMode off(false);
    try {
      eager = fn();
    } catch (const Error& e) {
      eager_error = e.what();
    }
  }
  for (const ExecMode& m : exec_modes()) {
    const std::string where = what + " [" + m.name + "]";
    try {
      Tensor got = m.run(fn);
      if (!eager_error.empty()) {
        ADD_FAILURE() << where << ": eager raised '" << eager_error << "', this mode did not";
        continue;
      }
      m.compare(eager, got, where);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), eager_error) << where << ": errors differ";
    }
  }
  if (!eager_error.empty()) {
    JitMode off(false);
    fn();  // raises eager's error again, for the case to see
  }
  return eager;
}

}  // namespace kiln::testing
