#include "jit/cpu/interleave.h"

#include <algorithm>

namespace kiln::jit {

namespace {
// Whether `n` reads or writes a slot of the Compiler's virtual stack (Compiler::newStack: the
// Philox code's round trip of a counter through memory, jit/cpu/philox_emitter.h).
bool touches_virtual_stack(asmjit::x86::Compiler& cc, asmjit::BaseNode* n) {
  asmjit::InstNode* in = n->as<asmjit::InstNode>();
  for (uint32_t i = 0; i < in->opCount(); ++i) {
    const asmjit::Operand& op = in->op(i);
    if (!op.isMem()) continue;
    const asmjit::BaseMem& m = op.as<asmjit::BaseMem>();
    if (m.hasBaseReg() && asmjit::Operand::isVirtId(m.baseId()) &&
        cc.virtRegById(m.baseId())->isStack())
      return true;
  }
  return false;
}
}  // namespace

bool interleave(asmjit::x86::Compiler& cc, const std::vector<NodeRange>& copies) {
  if (copies.size() < 2) return true;
  if (copies.front().first == nullptr) return false;
  std::vector<std::vector<asmjit::BaseNode*>> nodes(copies.size());
  size_t longest = 0;
  for (size_t u = 0; u < copies.size(); ++u) {
    for (asmjit::BaseNode* n = copies[u].first; n != nullptr; n = n->next()) {
      if (n->type() != asmjit::NodeType::kInst) return false;  // a label, jump, call, comment
      // Woven copies that each round-trip a value through their own stack slot computed wrong
      // values (fuzz seeds 20 and 272 on SSE2, 21 and 285 on AVX-512, drawing kernels at unroll
      // 2, KILN_JIT_ASSEMBLER=0; 2026-12-01): what asmjit's register allocator makes of the
      // slots once reordered was not pinned down. Such copies stay as emitted.
      if (touches_virtual_stack(cc, n)) return false;
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
