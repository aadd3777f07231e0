// expect_error(fn, part, also) / expect_error(fn, {parts...}): fails unless fn raises a kiln::Error
// whose message contains `part` (usually the op's name) and, when given, `also` / every part.
#pragma once
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

// Every part: expect_error(fn, {"sub", "alpha"}) or a vector. (One overload set, in one namespace:
// under unity builds a second expect_error elsewhere took such a braced list as a std::string built
// from two unrelated pointers.)
template <class F>
void expect_error(F&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    kiln::sync();  // with KILN_JIT=1, errors found by kernels surface at the sync point
    ADD_FAILURE() << "expected a kiln::Error containing '" << parts.at(0) << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& part : parts)
      EXPECT_NE(msg.find(part), std::string::npos)
          << "message '" << msg << "' lacks '" << part << "'";
  }
}

template <class F>
void expect_error(F&& fn, std::initializer_list<std::string> parts) {
  expect_error(std::forward<F>(fn), std::vector<std::string>(parts));
}

template <class F>
void expect_error(F&& fn, const std::string& part, const std::string& also = "") {
  if (also.empty())
    expect_error(std::forward<F>(fn), {part});
  else
    expect_error(std::forward<F>(fn), {part, also});
}

}  // namespace kiln::testing
