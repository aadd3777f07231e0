#include "jit/loop/row_pass_order.h"

namespace kiln::jit {

LoopKernel order_row_passes(const LoopKernel& k) {
  const size_t n = k.exprs.size();
  const std::vector<uint8_t> costly = k.costly_element_values();
  std::vector<uint8_t> reduce(n, 0);
  for (size_t i = 0; i < n; ++i) reduce[i] = expr_is_reduce(k.exprs[i].op);
  std::vector<int32_t> users_left(n, 0);  // operands not yet emitted, per expression
  std::vector<std::vector<int32_t>> users(n);
  for (size_t i = 0; i < n; ++i) {
    const Expr& e = k.exprs[i];
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) {
        ++users_left[i];
        users[static_cast<size_t>(o)].push_back(static_cast<int32_t>(i));
      }
  }
  std::vector<uint8_t> done(n, 0);
  std::vector<int32_t> order;
  order.reserve(n);
  // Takes the first ready expression by index: any non-Reduce, else a cheap Reduce, else a
  // costly one. O(n^2) over a kernel's few hundred expressions at most.
  while (order.size() < n) {
    int32_t pick = -1, cheap = -1, dear = -1;
    for (size_t i = 0; i < n && pick < 0; ++i) {
      if (done[i] || users_left[i] > 0) continue;
      if (!reduce[i])
        pick = static_cast<int32_t>(i);
      else if (!costly[static_cast<size_t>(k.exprs[i].a)] && cheap < 0)
        cheap = static_cast<int32_t>(i);
      else if (dear < 0)
        dear = static_cast<int32_t>(i);
    }
    if (pick < 0) pick = cheap >= 0 ? cheap : dear;
    done[static_cast<size_t>(pick)] = 1;
    order.push_back(pick);
    for (int32_t u : users[static_cast<size_t>(pick)]) --users_left[static_cast<size_t>(u)];
  }
  // The Reduces in their original order: nothing to move (the other expressions keep theirs).
  std::vector<int32_t> reduces_before, reduces_after;
  for (size_t i = 0; i < n; ++i)
    if (reduce[i]) reduces_before.push_back(static_cast<int32_t>(i));
  for (int32_t i : order)
    if (reduce[static_cast<size_t>(i)]) reduces_after.push_back(i);
  if (reduces_before == reduces_after) return k;
  LoopKernel out = k;
  std::vector<int32_t> id(n, -1);  // old expression -> new
  for (size_t j = 0; j < n; ++j) {
    Expr e = k.exprs[static_cast<size_t>(order[j])];
    for (int32_t* o : {&e.a, &e.b, &e.c})
      if (*o >= 0) *o = id[static_cast<size_t>(*o)];
    out.exprs[j] = e;
    id[static_cast<size_t>(order[j])] = static_cast<int32_t>(j);
  }
  for (int32_t& s : out.stores) s = id[static_cast<size_t>(s)];
  return out;
}

}  // namespace kiln::jit
