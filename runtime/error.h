// kiln::Error and the checks that raise it. Every error kiln raises is a kiln::Error.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Formats a message and throws kiln::Error. Kept out of line of the hot path by callers.
template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace kiln

// KILN_CHECK(cond, "fmt", args...): raise kiln::Error with the message when cond is false.
#define KILN_CHECK(cond, ...)    \
  do {                           \
    if (!(cond)) [[unlikely]]    \
      ::kiln::fail(__VA_ARGS__); \
  } while (0)
