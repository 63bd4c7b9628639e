// progress.cpp: who drives a group's transport (see transport.hpp,
// "Threads"): the queue of operations, callers running small ones inline or
// driving their own waits, the progress thread, and the orderly end of a
// session.
#include <cstring>

#include "transport.hpp"

namespace homa_torch {

namespace {

// The progress thread's longest single wait in libhoma while idle.
constexpr int64_t kIdlePumpNs = 50'000'000;

thread_local bool tl_driving = false;

// Driving marks the calling thread as the driver while it holds drive_mu_.
struct Driving {
  Driving() { tl_driving = true; }
  ~Driving() { tl_driving = false; }
};

}  // namespace

// ------------------------------------------------------------ who drives

void Transport::submit(std::function<void()> op) {
  {
    std::lock_guard<std::mutex> lk(q_mu_);
    queue_.push_back(std::move(op));
    queued_++;
  }
  n_queued++;
  last_call_ns_ = now_ns();
  q_cv_.notify_one();
  homa_wake(c_);  // the progress thread may wait in libhoma
}

bool Transport::driving_here() { return tl_driving; }

bool Transport::try_inline(const std::function<void()>& op) {
  last_call_ns_ = now_ns();
  // tl_driving: an operation issued from a callback the driver runs; it
  // goes after what is queued.
  if (tl_driving || queued_.load() != 0 || !drive_mu_.try_lock()) return false;
  if (queued_.load() != 0) {
    drive_mu_.unlock();
    return false;
  }
  {
    Driving d;
    op();
  }
  drive_mu_.unlock();
  n_inline++;
  last_call_ns_ = now_ns();
  return true;
}

void Transport::drive_until(const std::function<bool()>& done) {
  if (!done() && tl_driving)
    throw std::runtime_error("homa_dpdk.torch: a Work waited for inside a callback that the group's driver runs "
                             "(it would wait for itself)");
  callers_in_++;
  struct Out {
    std::atomic<int>& n;
    std::atomic<int64_t>& last;
    ~Out() {
      last = now_ns();
      n--;
    }
  } out{callers_in_, last_call_ns_};
  while (!done()) {
    {
      // Wake the holder (the progress thread waiting in libhoma) only when
      // there is one: a wake-up left for nobody ends the next wait early.
      std::unique_lock<std::mutex> dl(drive_mu_, std::try_to_lock);
      if (!dl.owns_lock()) {
        want_++;
        homa_wake(c_);
        dl.lock();
        want_--;
      }
      Driving d;
      run_queued();
      int64_t now = now_ns();
      if (!done() && !failed_) {
        if (now >= next_check_ns_) check_posted(now);
        pump_patiently(std::min<int64_t>(10'000'000, std::max<int64_t>(0, next_check_ns_ - now)));
      }
    }
    last_call_ns_ = now_ns();
    if (failed_ && !done()) {
      // The group failed: what is queued fails at once; a Work not queued
      // (a posted receive) was failed by fail().
      std::lock_guard<std::mutex> dl(drive_mu_);
      Driving d;
      run_queued();
      if (!done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

bool Transport::run_queued() {
  bool any = false;
  for (;;) {
    std::function<void()> op;
    {
      std::lock_guard<std::mutex> lk(q_mu_);
      if (queue_.empty()) return any;
      op = std::move(queue_.front());
      queue_.pop_front();
      queued_--;
    }
    op();
    any = true;
  }
}

// progress_loop is the group's progress thread: it runs queued operations
// and, while no caller has been in for grace_ns, answers requests, takes
// data and fills posted receives (what an irecv's Work, waited for from
// C++, needs), and notices failures. While callers come back to back it
// stays out of their way, so that each runs its small operations inline.
void Transport::progress_loop() {
  while (!stop_) {
    {
      std::unique_lock<std::mutex> lk(q_mu_);
      for (;;) {
        if (stop_) return;
        if (want_.load() > 0) {
          q_cv_.wait_for(lk, std::chrono::milliseconds(1));
          continue;
        }
        if (!queue_.empty()) break;
        // A caller in a wait drives its own progress: handing the session
        // to this thread and back would cost two wake-ups per message.
        int64_t idle = now_ns() - last_call_ns_.load();
        if (!failed_ && callers_in_.load() == 0 && idle >= cfg_.grace_ns) break;
        q_cv_.wait_for(lk, std::chrono::nanoseconds(failed_ || idle >= cfg_.grace_ns ? 1'000'000 : cfg_.grace_ns - idle));
      }
    }
    std::lock_guard<std::mutex> dl(drive_mu_);
    Driving d;
    try {
      if (run_queued()) {
        last_call_ns_ = now_ns();
        continue;  // callers may come back at once: let them run inline
      }
      if (failed_ || stop_ || want_.load() > 0 || queued_.load() > 0 || callers_in_.load() > 0) continue;
      int64_t now = now_ns();
      if (now >= next_check_ns_) check_posted(now);
      pump(std::max<int64_t>(0, std::min(kIdlePumpNs, next_check_ns_ - now)));
    } catch (const std::exception& e) {  // a future's callback that threw, say: the group cannot go on
      fail("homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": the progress thread: " + e.what());
    }
  }
}

void Transport::close() {
  if (stop_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lk(q_mu_);
  }
  q_cv_.notify_all();
  homa_wake(c_);
  if (thread_.joinable()) thread_.join();
  drain();
  homa_close(c_);
}

// drain lets this rank's last messages finish before the session ends:
// the daemon aborts a closing worker's RPCs, and a reply still on the
// submission ring, or a request not yet answered, would then fail the
// peer's RPC ("port unreachable") although its bytes were taken. It takes
// what arrives until every send is answered and every arena range (our
// replies' too) is released, for at most kDrainNs.
void Transport::drain() {
  constexpr int64_t kDrainNs = 2'000'000'000;
  std::lock_guard<std::mutex> dl(drive_mu_);
  int64_t deadline = now_ns() + kDrainNs;
  while (!failed_ && now_ns() < deadline) {
    homa_stats st;
    std::memset(&st, 0, sizeof st);
    st.size = sizeof st;
    if (homa_stats_get(c_, &st) != 0) return;
    if (inflight_msgs_ == 0 && st.arena_used == 0 && st.submissions_pending == 0) return;
    if (pump(1'000'000) < 0) return;
  }
}

}  // namespace homa_torch
