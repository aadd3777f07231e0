#include "tracer/measured_tier.h"

#include <algorithm>
#include <utility>

#include "runtime/logging.h"
#include "runtime/profiler.h"

namespace kiln::tracer {

MeasuredTier::Entry* MeasuredTier::find(uint64_t sig) {
  return const_cast<Entry*>(std::as_const(*this).find(sig));
}

const MeasuredTier::Entry* MeasuredTier::find(uint64_t sig) const {
  for (const Entry& e : entries_)
    if (e.used && e.sig == sig) return &e;
  return nullptr;
}

MeasuredTier::Entry& MeasuredTier::find_or_add(uint64_t sig) {
  if (Entry* e = find(sig)) return *e;
  Entry* victim = &entries_[0];
  for (Entry& e : entries_) {
    if (!e.used) {
      victim = &e;
      break;
    }
    if (e.seen < victim->seen) victim = &e;
  }
  *victim = Entry{};
  victim->used = true;
  victim->sig = sig;
  return *victim;
}

void MeasuredTier::end_interval(const Interval& it) {
  ++intervals_;
  Entry& e = find_or_add(it.sig);
  if (last_ != nullptr) {
    last_->next = it.sig;
    last_->has_next = true;
  }
  last_ = &e;
  e.seen = intervals_;
  e.ops = it.ops;
  e.work = it.work;
  // Past the limits fusion wins (and a trial would be long); small ones are the fixed rule's
  // (its intervals come untimed).
  e.timeable = it.ops <= kMaxOps && it.work <= kMaxWork;
  if (!e.timeable) return;
  if (e.choice != Choice::Undecided) {
    if (--e.hold <= 0) e.restart();
    return;
  }
  if (it.ran == Ran::Both && e.eager_turn()) {  // it cannot run whole eagerly: keep recording
    e.decide(Choice::Recorded);
    return;
  }
  if (it.timed && it.ticks > 0) sample(e, it);
}

void MeasuredTier::sample(Entry& e, const Interval& it) {
  if (it.ran == Ran::Recorded && it.planned_hit && !e.eager_turn()) {
    if (e.warm_recorded < kWarmRecorded) {
      ++e.warm_recorded;
    } else {
      e.recorded_min = std::min(e.recorded_min, it.ticks);
      ++e.recorded_n;
    }
  } else if (it.ran == Ran::Eagerly && e.eager_turn()) {
    if (e.warm_eager < kWarmEager) {
      ++e.warm_eager;
    } else {
      e.eager_min = std::min(e.eager_min, it.ticks);
      ++e.eager_n;
    }
  }
  if (e.recorded_n < kSamples || e.eager_n < kSamples) return;
  const bool eager =
      static_cast<double>(e.eager_min) < kMargin * static_cast<double>(e.recorded_min);
  e.decide(eager ? Choice::Eagerly : Choice::Recorded);
  KILN_DEBUG(Tracer,
             "eager tier: an interval of {} ops, {} elements ran in {} ticks eagerly and {} "
             "recorded at best; {} for the next {} intervals",
             it.ops, it.work, e.eager_min, e.recorded_min, eager ? "eagerly" : "recorded", kHold);
  if (eager) profiler::record_fallback("eager tier", "measured faster eagerly");
}

bool MeasuredTier::eager_next() const {
  if (last_ == nullptr || !last_->has_next) return false;
  const Entry* n = find(last_->next);
  if (n == nullptr || !n->timeable) return false;
  expect_ops_ = n->ops;
  expect_work_ = n->work;
  return n->choice == Choice::Eagerly || n->eager_turn();
}

void MeasuredTier::clear() {
  entries_ = {};
  last_ = nullptr;
}

std::optional<bool> MeasuredTier::choice_of(uint64_t sig) const {
  const Entry* e = find(sig);
  if (e == nullptr || e->choice == Choice::Undecided) return std::nullopt;
  return e->choice == Choice::Eagerly;
}

}  // namespace kiln::tracer
