// Standalone reproducer (not part of kiln or its build) of the GCC 12 wrong code behind the UBSan
// "member call on null pointer" reports at ops/copy.cpp's copy_eager (docs/testing.md,
// "Sanitizers"). The program has no undefined behaviour: nothing is null, every index is in range.
//
// Subscripting a conditional of two arrays with an index that calls a member function through a
// computed pointer, `(c ? t.b : t.a)[h.get()->index()]`, makes the C++ front end copy the
// subscript into both arms. -fsanitize=null (alone or in -fsanitize=undefined) wraps the `this`
// of `index()` in one SAVE_EXPR that both arms share; the gimplifier evaluates it in the arm it
// visits first only, and the other arm reads a temporary that was never set (GCC at -O1 warns
// "'<anonymous>' may be used uninitialized" on exactly that sub-expression).
//
//   g++-12 -std=c++20 -O0 -fsanitize=null      gcc12_cond_subscript.cpp && ./a.out
//       -> "c=true: 2", then a segmentation fault on the c=false call (no report at all)
//   g++-12 -std=c++20 -O2 -fsanitize=undefined gcc12_cond_subscript.cpp && ./a.out
//       -> "c=true: 2", then "runtime error: member call on null pointer of type 'struct Obj'"
//          and a segmentation fault (with -fno-sanitize-recover, the report and an abort)
//   clang++-14 -std=c++20 -O0/-O2 -fsanitize=address,undefined, or g++ with no sanitizer
//       -> "c=true: 2", "c=false: 1"
//
// kiln avoids the form: it computes such indices into locals before choosing the table.
#include <cstdio>

struct Obj {
  int k = 1;
  int index() const { return k; }
};
struct Handle {
  Obj* p;
  Obj* get() const { return p; }
};
using Fn = int (*)();
int one() { return 1; }
int two() { return 2; }
struct Tables {
  Fn a[2][2];
  Fn b[2][2];
};

__attribute__((noinline)) int pick(const Tables& t, bool c, const Handle& x, const Handle& y) {
  Fn f = (c ? t.b : t.a)[x.get()->index()][y.get()->index()];
  return f();
}

int main() {
  Tables t{{{one, one}, {one, one}}, {{two, two}, {two, two}}};
  Obj o;
  Handle h{&o};
  std::printf("c=true: %d\n", pick(t, true, h, h));
  std::fflush(stdout);
  std::printf("c=false: %d\n", pick(t, false, h, h));
}
