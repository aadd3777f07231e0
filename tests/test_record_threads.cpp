// The recorder under concurrency (KILN_JIT=1): threads that record at the same time, lazy tensors
// that cross threads (read, used as op inputs, dropped), and threads that end with work pending.
// Every result is compared bitwise with the same computation run eagerly beforehand. Threads hand
// tensors over with futures (happens-before), never with sleeps. No kiln random ops here: their
// Philox offsets are process-wide, so concurrent threads would draw in a racy order.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "record_util.h"

namespace kiln {
namespace {

using kiln::testing::JitRestore;

// Deterministic data without kiln's generator.
Tensor data(Shape shape, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 g(seed);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>((static_cast<int>(g() % 2001) - 1000) * 1e-3 * scale);
  return from_vector<float>(v, shape);
}

// t's elements in row-major order, each as its value and its bits in hex (a sync point).
std::string bytes(const Tensor& t) {
  std::string out;
  visit_dtype(t.dtype(), [&]<class T>(TypeTag<T>) {
    for (T v : t.to_vector<T>()) {
      out += std::to_string(v) + "/";
      const auto* p = reinterpret_cast<const unsigned char*>(&v);
      for (size_t i = sizeof v; i-- > 0;) {
        out += "0123456789abcdef"[p[i] >> 4];
        out += "0123456789abcdef"[p[i] & 15];
      }
      out += ' ';
    }
  });
  return out;
}

// Everything a workload observed: values read along the way and its final tensors.
using Observed = std::vector<std::string>;

// A two-layer MLP trained with SGD for a few steps; reads the loss every step.
Observed mlp_training(uint64_t seed) {
  Tensor w1 = data({8, 6}, seed, 0.5).requires_grad_();
  Tensor b1 = data({8}, seed + 1, 0.1).requires_grad_();
  Tensor w2 = data({3, 8}, seed + 2, 0.5).requires_grad_();
  Tensor b2 = data({3}, seed + 3, 0.1).requires_grad_();
  const Tensor x = data({5, 6}, seed + 4);
  const Tensor y = data({5, 3}, seed + 5);
  optim::SGD opt({w1, b1, w2, b2}, optim::SGDOptions(0.05).momentum(0.9));
  Observed seen;
  for (int step = 0; step < 6; ++step) {
    opt.zero_grad();
    Tensor h = relu(linear(x, w1, b1));
    Tensor loss = mse_loss(linear(h, w2, b2), y);
    loss.backward();
    opt.step();
    if (step % 2 == 1) seen.push_back(bytes(loss));  // some steps stay lazy across the update
  }
  for (const Tensor& p : {w1, b1, w2, b2}) seen.push_back(bytes(p.detach()));
  return seen;
}

// A chain of pointwise ops, in-place writes through views and reductions.
Observed pointwise_chain(uint64_t seed) {
  Tensor a = data({4, 7}, seed);
  Tensor b = data({7}, seed + 1);
  Tensor acc = zeros({4, 7});
  Observed seen;
  for (int i = 0; i < 20; ++i) {
    Tensor c = tanh(a * b + 0.5) - sigmoid(a) * 2.0;
    acc.add_(c, 0.25);
    acc.slice(1, 0, 7, 2).mul_(0.9);
    a = where(c > 0, exp(c.clamp(-3, 3)), c.abs()).transpose(0, 1).contiguous().t();
    if (i % 7 == 6) seen.push_back(bytes(acc.sum({1})));
  }
  seen.push_back(bytes(acc));
  seen.push_back(bytes(a));
  return seen;
}

Observed workload(int which) {
  return which % 2 == 0 ? mlp_training(100 + which) : pointwise_chain(200 + which);
}

TEST(RecordThreads, ConcurrentRecordingMatchesEagerBitwise) {
  JitRestore restore;
  constexpr int kThreads = 4;
  config().jit = false;
  std::vector<Observed> expected;
  for (int t = 0; t < kThreads; ++t) expected.push_back(workload(t));

  config().jit = true;
  for (int round = 0; round < 3; ++round) {  // later rounds hit the region cache concurrently
    std::vector<Observed> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { got[t] = workload(t); });
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[t], expected[t]) << "thread " << t;
  }
}

// config().jit switched on and off by the main thread while workers run ops (tracer/recorder.h:
// each thread changes mode at its next op, flushing what it recorded). Results match eager
// whatever mode each op ran in. The field is a relaxed atomic (runtime/relaxed.h); as a plain
// bool this was a data race, which the tsan preset reports.
TEST(RecordThreads, JitSwitchedWhileOtherThreadsRunOps) {
  JitRestore restore;
  constexpr int kThreads = 2;
  config().jit = false;
  std::vector<Observed> expected;
  for (int t = 0; t < kThreads; ++t) expected.push_back(workload(t));

  // Workers keep going (at least 3 rounds) until the main thread has switched 50 times.
  std::atomic<int> running{kThreads}, switches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3 || switches.load() < 50; ++round)
        EXPECT_EQ(workload(t), expected[t]) << "thread " << t << " round " << round;
      running.fetch_sub(1);
    });
  while (running.load() > 0) {
    config().jit = !config().jit;
    switches.fetch_add(1);
    std::this_thread::yield();
  }
  for (std::thread& th : threads) th.join();
}

// y is recorded on a worker that stays alive (no thread-exit flush); other threads read it and
// use it as an op input, which must compute it first.
TEST(RecordThreads, LazyTensorUsedOnAnotherThread) {
  JitRestore restore;
  config().jit = false;
  const Tensor x = data({3, 5}, 7);
  const Tensor ey = exp(x) * 3.0 - x.sum({0}, true);
  const std::string want_y = bytes(ey), want_z = bytes(ey.t().matmul(ey) + 1.0),
                    want_v = bytes(ey.slice(1, 1, 5, 2));

  config().jit = true;
  std::promise<Tensor> made;
  std::promise<void> done;
  std::thread producer([&] {
    Tensor y = exp(x) * 3.0 - x.sum({0}, true);
    Tensor keep = y * 2.0;  // more pending work on the producer's segment
    made.set_value(y);
    done.get_future().wait();
    EXPECT_EQ(bytes(keep), bytes(ey * 2.0));
  });
  Tensor y = made.get_future().get();
  std::string got_z, got_v;
  std::thread consumer([&] {
    got_z = bytes(y.t().matmul(y) + 1.0);  // an op input: materialized first
    got_v = bytes(y.slice(1, 1, 5, 2));    // a view of it, read
  });
  consumer.join();
  EXPECT_EQ(bytes(y), want_y);
  done.set_value();
  producer.join();
  EXPECT_EQ(got_z, want_z);
  EXPECT_EQ(got_v, want_v);
}

// The last handle to a lazy tensor is dropped on another thread while the producer goes on
// recording ops that read it.
TEST(RecordThreads, LastHandleDroppedOnAnotherThread) {
  JitRestore restore;
  config().jit = false;
  const Tensor x = data({6, 4}, 11);
  const std::string want = bytes((tanh(x) + 1.0).sum({1}) * 0.5);

  config().jit = true;
  std::promise<Tensor> made;
  std::promise<void> dropped;
  std::string got;
  std::thread producer([&] {
    Tensor y = tanh(x) + 1.0;
    Tensor s = y.sum({1});
    made.set_value(std::move(y));  // the only handle to y now lives on the main thread
    dropped.get_future().wait();
    s = s * 0.5;
    got = bytes(s);
  });
  {
    Tensor y = made.get_future().get();
    y = Tensor();  // the storage dies here, on this thread
  }
  dropped.set_value();
  producer.join();
  EXPECT_EQ(got, want);
}

// Threads end with work pending: the thread-exit flush must compute the values other threads
// still hold, including writes into a materialized tensor and views of lazy ones.
TEST(RecordThreads, ThreadExitFlushComputesValuesHeldElsewhere) {
  JitRestore restore;
  constexpr int kThreads = 4;
  config().jit = false;
  std::vector<std::string> want_y, want_w, want_v;
  for (int t = 0; t < kThreads; ++t) {
    Tensor w = data({5, 5}, 30 + t);
    Tensor y = (sigmoid(w) * (t + 1)).matmul(w);
    w.slice(0, 1, 5, 2).add_(y.slice(0, 0, 2), 0.5);
    want_y.push_back(bytes(y));
    want_w.push_back(bytes(w));
    want_v.push_back(bytes(y.t().select(0, 2)));
  }

  config().jit = true;
  std::vector<Tensor> ws, ys, vs(kThreads);
  for (int t = 0; t < kThreads; ++t) ws.push_back(data({5, 5}, 30 + t));
  ys.resize(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Tensor w = ws[t];
      Tensor y = (sigmoid(w) * (t + 1)).matmul(w);
      w.slice(0, 1, 5, 2).add_(y.slice(0, 0, 2), 0.5);  // a pending write into a materialized input
      ys[t] = y;
      vs[t] = y.t().select(0, 2);
      // Ends without a sync point.
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(bytes(ys[t]), want_y[t]) << "thread " << t;
    EXPECT_EQ(bytes(ws[t]), want_w[t]) << "thread " << t;
    EXPECT_EQ(bytes(vs[t]), want_v[t]) << "thread " << t;
  }
}

// A lazy tensor produced on one thread and written in place on another (the producer is still
// alive): the write must see the produced value and the producer must see its own value.
TEST(RecordThreads, InPlaceWriteIntoAnotherThreadsLazyTensor) {
  JitRestore restore;
  config().jit = false;
  const Tensor x = data({4, 4}, 51);
  Tensor ey = x * 2.0 + 1.0;
  const std::string want_keep = bytes(ey.sum());
  ey.select(1, 0).mul_(-1.0);
  const std::string want_y = bytes(ey);

  config().jit = true;
  std::promise<Tensor> made;
  std::promise<void> written;
  std::string got_keep;
  std::thread producer([&] {
    Tensor y = x * 2.0 + 1.0;
    Tensor keep = y.sum();  // recorded before the other thread's write
    made.set_value(y);
    written.get_future().wait();
    got_keep = bytes(keep);
  });
  Tensor y = made.get_future().get();
  y.select(1, 0).mul_(-1.0);
  written.set_value();
  producer.join();
  EXPECT_EQ(bytes(y), want_y);
  EXPECT_EQ(got_keep, want_keep);
}

// A write into a materialized tensor that is still pending on another (live) thread's segment is
// seen by a later read on this thread, as an op input and through a view.
TEST(RecordThreads, PendingWriteOnAnotherThreadIsSeen) {
  JitRestore restore;
  config().jit = false;
  Tensor ex = data({4, 6}, 71);
  ex.slice(1, 0, 6, 3).add_(ex.select(1, 1).unsqueeze(1), 2.0);
  const std::string want_z = bytes(ex * 2.0), want_v = bytes(ex.t().select(0, 3));

  config().jit = true;
  Tensor x = data({4, 6}, 71);
  std::promise<void> written, done;
  std::thread writer([&] {
    x.slice(1, 0, 6, 3).add_(x.select(1, 1).unsqueeze(1), 2.0);  // pending in this segment
    written.set_value();
    done.get_future().wait();
  });
  written.get_future().wait();
  const std::string got_z = bytes(x * 2.0);
  const std::string got_v = bytes(x.t().select(0, 3));
  done.set_value();
  writer.join();
  EXPECT_EQ(got_z, want_z);
  EXPECT_EQ(got_v, want_v);
}

// Write after a pending read on another thread: the producer recorded a read of the materialized
// tensor x, then (ordered by a future) another thread writes x. Eager read x before the write, so
// the producer's value must not see it.
// (The writer's recorder flushes the segments with pending reads of x first: tracer/recorder.cpp,
// flush_other_readers.)
TEST(RecordThreads, WriteAfterPendingReadOnAnotherThread) {
  JitRestore restore;
  config().jit = false;
  const Tensor x0 = data({3, 3}, 61);
  const std::string want_y = bytes(x0 * 2.0);

  config().jit = true;
  Tensor x = data({3, 3}, 61);
  std::promise<Tensor> made;
  std::promise<void> done;
  std::thread producer([&] {
    Tensor y = x * 2.0;  // reads x's current contents (in eager order)
    made.set_value(y);
    done.get_future().wait();
  });
  Tensor y = made.get_future().get();
  x.add_(1.0);  // after the read, in happens-before order
  sync();
  const std::string got_y = bytes(y);
  done.set_value();
  producer.join();
  EXPECT_EQ(got_y, want_y);
}

// The same when the writer's own thread switches recording off just before the write: the first
// op after the switch goes through the thread's recorder (which flushes its segment and runs the
// op eagerly), and it must still flush the other segments' pending reads of x first, as eager
// mode does (RecordFuzz.ProgramsHandedBetweenThreads... seed 1017435 found it).
TEST(RecordThreads, WriteWithRecordingSwitchedOffAfterPendingReadOnAnotherThread) {
  JitRestore restore;
  config().jit = false;
  const Tensor x0 = data({3, 3}, 62);
  const std::string want_y = bytes(x0 * 2.0);

  config().jit = true;
  Tensor x = data({3, 3}, 62);
  std::promise<Tensor> made;
  std::promise<void> done;
  std::thread producer([&] {
    Tensor y = x * 2.0;  // a pending read of x in this thread's segment
    made.set_value(y);
    done.get_future().wait();
  });
  Tensor y = made.get_future().get();
  Tensor z = x + 1.0;    // this thread records too: its recorder is its mode
  config().jit = false;  // switched off: the next op is this thread's last recorded one
  x.div_(2.0);           // eager, after the producer's read in happens-before order
  const std::string got_y = bytes(y);
  done.set_value();
  producer.join();
  EXPECT_EQ(got_y, want_y);
  EXPECT_EQ(bytes(z), bytes(x0 + 1.0));
}

// The same with a raw write through mutable_data_ptr(), which bypasses the recorder: the write
// still flushes the other threads' segments that read x first (runtime/lazy.h, before_write).
TEST(RecordThreads, RawWriteAfterPendingReadOnAnotherThread) {
  JitRestore restore;
  config().jit = false;
  const std::string want_y = bytes(data({4}, 62) * 2.0);

  config().jit = true;
  Tensor x = data({4}, 62);
  sync();              // x is materialized
  Tensor y = x * 2.0;  // recorded: reads x's current contents
  std::thread writer([&x] { x.mutable_data_ptr<float>()[0] = 100.0f; });
  writer.join();  // the write comes after the read, in eager order
  EXPECT_EQ(bytes(y), want_y);
}

// And with an eager in-place op on the other thread: an opaque callback's ops run in eager mode
// (EagerModeGuard), not through that thread's recorder, and still flush the pending readers first.
TEST(RecordThreads, EagerWriteInOpaqueAfterPendingReadOnAnotherThread) {
  JitRestore restore;
  config().jit = false;
  const std::string want_y = bytes(data({4}, 63) * 2.0);

  config().jit = true;
  Tensor x = data({4}, 63);
  sync();              // x is materialized
  Tensor y = x * 2.0;  // recorded: reads x's current contents
  std::thread writer([&x] {
    opaque(
        [&x](const TensorList&) {
          x.add_(100.0);
          return TensorList{};
        },
        {});
  });
  writer.join();
  EXPECT_EQ(bytes(y), want_y);
}

}  // namespace
}  // namespace kiln
