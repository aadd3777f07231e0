#include "jit/cpu/interleave.h"

#include <algorithm>

namespace kiln::jit {

bool interleave(asmjit::x86::Compiler& cc, const std::vector<NodeRange>& copies) {
  if (copies.size() < 2) return true;
  if (copies.front().first == nullptr) return false;
  std::vector<std::vector<asmjit::BaseNode*>> nodes(copies.size());
  size_t longest = 0;
  for (size_t u = 0; u < copies.size(); ++u) {
    for (asmjit::BaseNode* n = copies[u].first; n != nullptr; n = n->next()) {
      if (n->type() != asmjit::NodeType::kInst) return false;  // a label, jump, call, comment
      nodes[u].push_back(n);
      if (n == copies[u].second) break;
    }
    longest = std::max(longest, nodes[u].size());
  }
  asmjit::BaseNode* at = copies.front().first->prev();
  for (const auto& copy : nodes)
    for (asmjit::BaseNode* n : copy) cc.removeNode(n);
  for (size_t i = 0; i < longest; ++i)
    for (const auto& copy : nodes)
      if (i < copy.size()) {
        cc.addAfter(copy[i], at);
        at = copy[i];
      }
  cc.setCursor(at);
  return true;
}

}  // namespace kiln::jit
