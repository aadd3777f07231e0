// expect_error(fn, part, also): fails unless fn raises a kiln::Error whose message contains `part`
// (usually the op's name) and, when given, `also`.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "kiln/kiln.h"

namespace kiln::testing {

template <class F>
void expect_error(F&& fn, const std::string& part, const std::string& also = "") {
  try {
    fn();
    kiln::sync();  // with KILN_JIT=1, errors found by kernels surface at the sync point
    ADD_FAILURE() << "expected a kiln::Error containing '" << part << "'";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
    if (!also.empty()) {
      EXPECT_NE(msg.find(also), std::string::npos) << msg;
    }
  }
}

}  // namespace kiln::testing
