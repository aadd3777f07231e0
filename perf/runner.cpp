// Times one job: the first call on a fresh Case (timed apart: it includes one-time costs such as
// page faults, and, once the JIT exists, compilation), a check of its result, warm-up runs, then
// the timed repetitions. Every run ends with kiln::sync() so that recorded work is included.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "perf/harness.h"
#include "perf/peers/peer.h"

namespace kiln::perf {

namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

double timed_run(Case& c) {
  double t0 = now_ms();
  c.run();
  sync();
  return now_ms() - t0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Progress on stderr: one line rewritten in place on a terminal, start/end lines otherwise.
class Progress {
 public:
  Progress(const Job& job, int index, int total)
      : tty_(isatty(STDERR_FILENO)),
        head_(fmt::format("kiln-perf [{}/{}] {} {} {}", index, total, job.workload->name, job.mode,
                          job.device)) {
    if (!tty_) fmt::print(stderr, "{} ...\n", head_);
  }
  void step(const char* what, int i, int n) {
    if (tty_) fmt::print(stderr, "\r\033[K{}: {} {}/{}", head_, what, i, n);
  }
  void done(const Figure& f) {
    fmt::print(stderr, "{}{}: median {:.3f} ms (first call {:.3f} ms)\n", tty_ ? "\r\033[K" : "",
               head_, f.median_ms, f.first_call_ms);
  }

 private:
  bool tty_;
  std::string head_;
};

// A libtorch peer as a Case. Its check() raises std::runtime_error, which main() reports as a
// failed workload (exit 1), as it does kiln::Error.
class PeerAdapter : public Case {
 public:
  explicit PeerAdapter(std::unique_ptr<peer::PeerCase> c) : c_(std::move(c)) {}
  void run() override { c_->run(); }
  void check() const override { c_->check(); }

 private:
  std::unique_ptr<peer::PeerCase> c_;
};

Prepared prepare(const Job& job, Size size) {
  if (job.mode != "libtorch") return job.workload->prepare(size, Device::cpu());
  // Same sizes and the same thread count as kiln (at::set_num_threads(num_threads())).
  peer::PeerPrepared pp =
      peer::libtorch_prepare(job.workload->name, size == Size::Small, num_threads());
  Prepared p;
  p.c = std::make_unique<PeerAdapter>(std::move(pp.c));
  p.shape = pp.shape;
  p.bytes = pp.bytes;
  p.ops = pp.ops;
  return p;
}

}  // namespace

Figure measure(const Job& job, const Options& o, int index, int total) {
  config().jit = false;  // eager is the only mode until the tracer lands (plan() checked it)
  Progress progress(job, index, total);
  progress.step("preparing", 0, 1);
  Prepared p = prepare(job, o.size);

  Figure f;
  f.workload = job.workload->name;
  f.mode = job.mode;
  f.device = job.device;
  f.shape = p.shape;
  f.reps = o.reps;
  f.warmup = o.warmup;
  f.threads = num_threads();
  f.implicit = job.implicit;

  progress.step("first call", 0, 1);
  f.first_call_ms = timed_run(*p.c);
  p.c->check();
  for (int i = 0; i < o.warmup; ++i) {
    progress.step("warm-up", i + 1, o.warmup);
    timed_run(*p.c);
  }
  std::vector<double> times;
  for (int i = 0; i < o.reps; ++i) {
    progress.step("rep", i + 1, o.reps);
    times.push_back(timed_run(*p.c));
  }
  f.median_ms = median(times);
  f.min_ms = *std::min_element(times.begin(), times.end());
  f.max_ms = *std::max_element(times.begin(), times.end());
  if (p.bytes > 0 && f.median_ms > 0) f.gbps = p.bytes / (f.median_ms * 1e-3) / 1e9;
  if (p.ops > 0) f.us_per_op = f.median_ms * 1e3 / p.ops;
  progress.done(f);
  return f;
}

void attach_copy_fractions(std::vector<Figure>& figures) {
  for (Figure& f : figures) {
    if (!f.gbps) continue;
    for (const Figure& c : figures) {
      if (c.workload == "copy" && c.mode == f.mode && c.device == f.device && c.gbps) {
        f.copy_fraction = *f.gbps / *c.gbps;
        break;
      }
    }
  }
}

}  // namespace kiln::perf
