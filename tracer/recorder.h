// The recorder: the ModeHandler that KILN_JIT=1 installs on every thread that dispatches an op
// (DESIGN.md, "The flow of one op", step 3). Each thread records into its own Segment; a tensor
// another thread's segment produces is materialized before this thread records a use of it.
// Setting config().jit = false at run time flushes the thread's segment at its next op and
// returns it to eager mode.
#pragma once
#include "runtime/lazy.h"

namespace kiln::tracer {

// Registers the recorder with the dispatcher and the sync points (called by kiln::init()).
void register_recorder();

// Flushes this thread's segment (what kiln::sync() does when recording).
void flush_this_thread(SyncReason reason);
// Ops recorded on this thread and not yet flushed.
int64_t pending_ops_this_thread();
// Ops this thread recorded without their meta function (Segment::known_meta), since it began
// (tests).
int64_t known_metas_this_thread();

class EagerTier;
// This thread's eager tier (tracer/eager_tier.h), or null before its first recorded op (tests).
EagerTier* eager_tier_this_thread();

}  // namespace kiln::tracer
