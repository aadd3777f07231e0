#include "ops/cpu/store_choice.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>

#include "runtime/error.h"
#include "runtime/logging.h"

namespace kiln {

StoreChoice::Mode StoreChoice::mode_from(const std::string& s) {
  if (s.empty() || s == "auto") return Mode::Auto;
  if (s == "on") return Mode::On;
  if (s == "off") return Mode::Off;
  fail("KILN_JIT_STREAMING={}: expected auto, on or off", s);
}

StoreChoice::Pick StoreChoice::next(Mode mode) {
  std::lock_guard lock(mu_);
  const Pick p = pick(mode);
  streamed_ += p.streaming;
  return p;
}

StoreChoice::Pick StoreChoice::pick(Mode mode) {
  if (mode != Mode::Auto) return {mode == Mode::On, false};
  if (decided_ >= 0) return {decided_ == 1, false};
  if (eligible_++ == 0 || in_flight_) return {true, false};  // cold first launch; a concurrent one
  // Alternate, ordinary stores first, until each kind has its trials.
  const bool streaming = trials_[1] < trials_[0];
  in_flight_ = true;
  return {streaming, true};
}

int64_t StoreChoice::streamed() const {
  std::lock_guard lock(mu_);
  return streamed_;
}

void StoreChoice::reset() {
  std::lock_guard lock(mu_);
  eligible_ = 0;
  trials_[0] = trials_[1] = 0;
  best_[0] = best_[1] = 0;
  in_flight_ = false;
  decided_ = -1;
  streamed_ = 0;
}

bool StoreChoice::record(bool streaming, int64_t elements, int64_t ns) {
  std::lock_guard lock(mu_);
  in_flight_ = false;
  if (decided_ >= 0 || elements <= 0) return false;
  const double t = static_cast<double>(ns) / static_cast<double>(elements);
  const int s = streaming ? 1 : 0;
  best_[s] = trials_[s] == 0 ? t : std::min(best_[s], t);
  ++trials_[s];
  if (trials_[0] < kTrials || trials_[1] < kTrials) return false;
  decided_ = best_[1] <= best_[0] ? 1 : 0;
  return true;
}

void StoreChoice::abandon() {
  std::lock_guard lock(mu_);
  in_flight_ = false;
}

int StoreChoice::decided() const {
  std::lock_guard lock(mu_);
  return decided_;
}

double StoreChoice::best_ns_per_element(bool streaming) const {
  std::lock_guard lock(mu_);
  const int s = streaming ? 1 : 0;
  return trials_[s] > 0 ? best_[s] : std::numeric_limits<double>::infinity();
}

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void StoreTrial::start() {
  uncaught_ = std::uncaught_exceptions();
  t0_ = now_ns();
}

void StoreTrial::finish() {
  if (std::uncaught_exceptions() > uncaught_)
    choice_->abandon();
  else if (choice_->record(pick_.streaming, elements_, now_ns() - t0_))
    logging::get(sub_).debug(
        "{}: {} stores for large outputs (best ns per element: streaming {:.3f}, ordinary {:.3f})",
        name_, choice_->decided() == 1 ? "non-temporal" : "ordinary",
        choice_->best_ns_per_element(true), choice_->best_ns_per_element(false));
}

}  // namespace kiln
