// Interleaves independent copies of straight-line code in an asmjit Compiler's node list.
//
// The CPU target's unrolled loop body is emitted as U copies one after the other, each for its
// own vectors (jit/cpu/render.cpp). Each copy of a vector-math body is one long dependency chain
// (gelu: ~40 operations deep); weaving the copies instruction by instruction (copy 0's first,
// copy 1's first, ..., copy 0's second, ...) puts independent operations next to each other, so
// the scheduler has work from U chains at once instead of waiting on one.
//
// Contract: `copies` are consecutive, non-overlapping ranges [first, last] of the node list, in
// list order, and each reads only its own registers and memory plus values defined before the
// first of them (constants, pointers). Within a copy the order is kept, so each copy computes
// what it computed before; identical copies put every load before any store. Only plain
// instructions are moved: a range holding anything else (a label, a jump, a call, a comment), or
// an instruction on a slot of the Compiler's virtual stack (newStack: woven, such copies computed
// wrong values), is left as emitted and interleave() returns false.
#pragma once
#include <asmjit/x86.h>

#include <utility>
#include <vector>

namespace kiln::jit {

using NodeRange = std::pair<asmjit::BaseNode*, asmjit::BaseNode*>;  // first, last (inclusive)

bool interleave(asmjit::x86::Compiler& cc, const std::vector<NodeRange>& copies);

}  // namespace kiln::jit
