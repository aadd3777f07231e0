// The store choice of eager pointwise ops (ops/cpu/store_choice.h): one StoreChoice per (op,
// compute dtype), for outputs the streaming loops may write (streams_output: contiguous and
// kStreamingBytes or more). Each measures its own calls as a JIT kernel measures its launches;
// the same bits either way. Process-wide, never destroyed.
#pragma once
#include "ops/cpu/pointwise_table.h"
#include "ops/cpu/store_choice.h"

namespace kiln {

StoreChoice& eager_store_choice(OpId op, DType compute);

// The loop of (op, compute) for `out` from table `t`: the streaming one where `out` may stream
// and the choice (KILN_JIT_STREAMING) picks it; `pick` says whether to time the call, against
// `choice` (null where `out` cannot stream: no lookup on small ops).
struct ChosenLoop {
  InnerLoop fn;
  StoreChoice::Pick pick;
  StoreChoice* choice;
};
ChosenLoop choose_pointwise_loop(const PointwiseTable& t, OpId op, DType compute,
                                 const TensorImpl* out);

}  // namespace kiln
