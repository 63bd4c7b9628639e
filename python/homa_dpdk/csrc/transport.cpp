// transport.cpp: see transport.hpp: failure, receiving and sending (the
// set-up is setup.cpp, who drives them progress.cpp).
#include "transport.hpp"

#include <sched.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

namespace homa_torch {

namespace {

// A receive that has waited this long probes its source, and again as
// long: a rank that is gone (its port unbound, its host down) fails the
// probe, and so the group, instead of leaving the others waiting until the
// group's timeout.
constexpr int64_t kProbeAfterNs = 1'000'000'000;
// How often the driver looks at posted receives (timeouts, probes).
constexpr int64_t kCheckEveryNs = 50'000'000;

std::string str_status(int rc) { return homa_strerror(rc); }

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// --------------------------------------------------------------- failure

std::string Transport::failure() const {
  std::lock_guard<std::mutex> lk(fail_mu_);
  return failure_;
}

void Transport::check_failed() {
  if (failed_) throw std::runtime_error(failure());
}

void Transport::fail_and_throw(const std::string& why) {
  fail(why);
  throw std::runtime_error(failure());
}

void Transport::fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> lk(fail_mu_);
    if (failure_.empty()) failure_ = why;
  }
  failed_ = true;
  std::string f = failure();
  std::vector<RecvPtr> all;
  for (auto& kv : bound_) all.push_back(kv.second);
  for (auto& r : any_) all.push_back(r);
  bound_.clear();
  any_.clear();
  early_.clear();
  early_bytes_ = 0;
  std::fill(early_msgs_.begin(), early_msgs_.end(), 0);
  for (auto& r : all) complete(r, nullptr, f);
}

std::string Transport::who(const homa_addr& a) const {
  for (int r = 0; r < cfg_.size; r++)
    if (peers_[r].family == a.family && std::memcmp(peers_[r].ip, a.ip, 16) == 0 && peers_[r].port == a.port)
      return "rank " + std::to_string(r);
  char buf[64];
  const char* s = homa_addr_format(&a, buf, sizeof buf);
  return std::string(s ? s : "?") + ":" + std::to_string(a.port);
}

// ------------------------------------------------------------- receiving

int Transport::pump(int64_t timeout_ns) {
  if (failed_) return 0;
  int n = homa_receive_burst(c_, msgs_.data(), int(msgs_.size()), timeout_ns);
  if (n == HOMA_ETIMEDOUT) return 0;
  if (n < 0) {
    if (stop_ && (n == HOMA_ECLOSED || n == HOMA_EDEAD)) return n;
    fail("homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": the session has ended (" + str_status(n) +
         "): the daemon stopped, or ended this worker");
    return n;
  }
  for (int i = 0; i < n; i++) take(msgs_[i]);
  return n;
}

void Transport::take(homa_msg& m) {
  switch (m.kind) {
    case HOMA_MSG_REQUEST: {
      Header h{};
      bool real = m.length >= sizeof h;
      if (real) std::memcpy(&h, m.data, sizeof h);
      real = real && believe(h, m);
      if (!real) {
        n_stranger++;
      } else if (h.magic == kMagic) {
        n_received++;
        on_data(h, m.data + sizeof h, m.length - sizeof h);
      }  // a rank's probe: answered, then ignored
      if (!failed_) answer(m, !real);
      homa_msg_release(c_, &m);
      return;
    }
    case HOMA_MSG_RESPONSE:
      if (m.tag != 0) {
        inflight_bytes_ -= std::min<uint64_t>(inflight_bytes_, m.tag & 0xffffffffu);
        if (inflight_msgs_) inflight_msgs_--;
      }
      homa_msg_release(c_, &m);
      return;
    case HOMA_MSG_FAILED:
      if (m.refused == 2) {
        n_dropped++;  // our answer to a request was refused: its sender is gone
      } else {
        if (m.tag != 0) {
          inflight_bytes_ -= std::min<uint64_t>(inflight_bytes_, m.tag & 0xffffffffu);
          if (inflight_msgs_) inflight_msgs_--;
        }
        on_failed(m);
      }
      homa_msg_release(c_, &m);
      return;
    default:
      n_dropped++;
      homa_msg_release(c_, &m);
  }
}

// believe says whether request m, whose header is h, is rank h.src's: a
// kMagic or kProbe header, a rank of the group, that rank's key, from that
// rank's host, and from the client port its first believed request came
// from (a request comes from its sender's client port, not the port the
// rank bound, and a session keeps one client port).
bool Transport::believe(const Header& h, const homa_msg& m) {
  if (h.magic != kMagic && h.magic != kProbe) return false;
  if (h.src >= uint32_t(cfg_.size) || h.key != keys_[h.src]) return false;
  const homa_addr& p = peers_[h.src];
  if (p.family != m.peer.family || std::memcmp(p.ip, m.peer.ip, 16) != 0) return false;
  uint16_t& cport = cports_[h.src];
  if (cport == 0) cport = m.peer.port;
  return cport == m.peer.port;
}

// answer ends request m with a one-byte detached reply. A stranger's
// request is answered too (its RPC would otherwise stay in this session),
// but an answer to it that fails does not fail the group.
void Transport::answer(const homa_msg& m, bool stranger) {
  static const uint8_t one = 0;
  iovec iov{const_cast<uint8_t*>(&one), 1};
  int rc = homa_reply(c_, &m, &iov, 1, HOMA_REPLY_DETACHED);
  if (rc < 0 && stranger && rc != HOMA_EDEAD && rc != HOMA_ECLOSED) return;
  if (rc < 0 && rc != HOMA_EREPLIED)
    fail("homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": an answer to " + who(m.peer) + ": " +
         str_status(rc) + (rc == HOMA_EDEAD || rc == HOMA_ECLOSED ? " (the session has ended)" : ""));
}

void Transport::on_failed(const homa_msg& m) {
  int dst = int(m.tag >> 32) - 1;
  std::string to = dst >= 0 && dst < cfg_.size ? "rank " + std::to_string(dst) : who(m.peer);
  fail("homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": a message to " + to + " failed (" +
       str_status(m.err) + "): is that rank gone?");
}

void Transport::on_data(const Header& h, const uint8_t* p, uint64_t n) {
  int src = int(h.src);
  if (h.offset > h.total || n > h.total - h.offset) {
    fail("homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": rank " + std::to_string(src) + " sent bytes [" +
         std::to_string(h.offset) + ", +" + std::to_string(n) + ") of a " + std::to_string(h.total) + "-byte message");
    return;
  }
  Key k{src, h.tag, h.seq};
  RecvPtr r;
  auto it = bound_.find(k);
  if (it != bound_.end()) {
    r = it->second;
  } else if (stale(k)) {
    n_stale++;  // a receive that completed (or failed) already: a copy
    return;
  } else if (!any_.empty()) {
    auto s = recv_seq_.find(Stream{src, h.tag});
    if ((s == recv_seq_.end() ? 0 : s->second) == h.seq) r = bind_any(src, h.tag, h.seq);
  }
  if (r) {
    fill(r, k, h.offset, h.total, p, n);
    return;
  }
  keep_early(k, h, p, n);
}

// stale: k is for no posted receive, and its stream has passed it (the
// receive for it completed or failed), or its collective has ended.
bool Transport::stale(const Key& k) const {
  if (k.tag < 0 && k.tag >= coll_done_) return true;
  auto s = recv_seq_.find(Stream{k.src, k.tag});
  return s != recv_seq_.end() && k.seq < s->second;
}

// keep_early keeps a part for a receive not posted yet, within
// max_unexpected bytes (all ranks) and max_unexpected_msgs messages of
// its rank: past either the group fails, naming the rank. A copy of a part
// kept already is dropped (admit).
void Transport::keep_early(const Key& k, const Header& h, const uint8_t* p, uint64_t n) {
  std::string rank = "homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": ";
  if (n == 0 && h.total > 0) {
    n_duplicate++;  // an empty part of a message that is not: it brings nothing
    return;
  }
  auto it = early_.find(k);
  if (it != early_.end()) {
    if (h.total != it->second.total) {
      fail(rank + "rank " + std::to_string(k.src) + " sent parts of one message (tag " + std::to_string(k.tag) +
           ") of " + std::to_string(it->second.total) + " and " + std::to_string(h.total) + " bytes");
      return;
    }
    if (!admit(it->second.got, k, h.offset, n, h.total)) return;
  }
  if (early_bytes_ + n > uint64_t(cfg_.max_unexpected)) {
    fail(rank + "more than " + std::to_string(cfg_.max_unexpected) +
         " bytes arrived for receives not yet posted, the last from rank " + std::to_string(k.src) +
         " (HOMA_DPDK_TORCH_MAX_UNEXPECTED)");
    return;
  }
  if (it == early_.end()) {
    if (early_msgs_[k.src] >= uint64_t(cfg_.max_unexpected_msgs)) {
      fail(rank + "more than " + std::to_string(cfg_.max_unexpected_msgs) + " messages from rank " +
           std::to_string(k.src) + " arrived for receives not yet posted (HOMA_DPDK_TORCH_MAX_UNEXPECTED_MSGS)");
      return;
    }
    early_msgs_[k.src]++;
    it = early_.emplace(k, Early{}).first;
    it->second.total = h.total;
    if (n) it->second.got.add(h.offset, n);
  }
  it->second.parts.emplace_back(h.offset, std::vector<uint8_t>(p, p + n));
  early_bytes_ += n;
  n_unexpected++;
}

// admit records part [off, +n) of k's message (total bytes) in got and says
// whether it is new. A part whose every byte came already (a copy: the
// same part twice) is dropped and counted; one that overlaps bytes that
// came, which no rank sends, fails the group naming the rank. Either way
// a message completes only once every one of its bytes has come.
bool Transport::admit(Spans& got, const Key& k, uint64_t off, uint64_t n, uint64_t total) {
  Spans::Verdict v = n ? got.add(off, n) : Spans::kDuplicate;
  if (v == Spans::kNew) return true;
  if (v == Spans::kDuplicate) {
    n_duplicate++;
    return false;
  }
  fail("homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": rank " + std::to_string(k.src) + " sent bytes [" +
       std::to_string(off) + ", +" + std::to_string(n) + ") of a " + std::to_string(total) + "-byte message (tag " +
       std::to_string(k.tag) + ") that overlap bytes it sent already");
  return false;
}

Spans::Verdict Spans::add(uint64_t off, uint64_t n) {
  uint64_t end = off + n;
  if (end <= prefix_) return kDuplicate;
  if (off < prefix_) return kOverlap;
  // rest_'s spans lie past prefix_, sorted and apart: next is the first
  // that begins after off, prev the one before it.
  auto next = std::upper_bound(rest_.begin(), rest_.end(), off,
                               [](uint64_t o, const std::pair<uint64_t, uint64_t>& s) { return o < s.first; });
  if (next != rest_.begin()) {
    auto prev = next - 1;
    if (prev->second >= end) return kDuplicate;
    if (prev->second > off) return kOverlap;
  }
  if (next != rest_.end() && next->first < end) return kOverlap;
  bytes_ += n;
  if (off == prefix_) {
    prefix_ = end;
    size_t joined = 0;
    while (joined < rest_.size() && rest_[joined].first == prefix_) prefix_ = rest_[joined++].second;
    rest_.erase(rest_.begin(), rest_.begin() + joined);
    return kNew;
  }
  bool with_prev = next != rest_.begin() && (next - 1)->second == off;
  bool with_next = next != rest_.end() && next->first == end;
  if (with_prev && with_next) {
    (next - 1)->second = next->second;
    rest_.erase(next);
  } else if (with_prev) {
    (next - 1)->second = end;
  } else if (with_next) {
    next->first = off;
  } else {
    rest_.insert(next, {off, end});
  }
  return kNew;
}

RecvPtr Transport::bind_any(int src, int64_t tag, uint64_t seq) {
  for (auto it = any_.begin(); it != any_.end(); ++it) {
    if ((*it)->tag != tag) continue;
    RecvPtr r = *it;
    any_.erase(it);
    r->src = src;
    r->seq = seq;
    recv_seq_[Stream{src, tag}] = seq + 1;
    bound_[Key{src, tag, seq}] = r;
    return r;
  }
  return nullptr;
}

void Transport::fill(const RecvPtr& r, const Key& k, uint64_t off, uint64_t total, const uint8_t* p, uint64_t n) {
  if (total != r->nbytes) {
    complete(r, &k,
             "homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": rank " + std::to_string(k.src) + " sent " +
                 std::to_string(total) + " bytes for a receive of " + std::to_string(r->nbytes) + " (tag " +
                 std::to_string(k.tag) + ")");
    return;
  }
  if (total > 0) {  // a 0-byte message is its one part
    if (!admit(r->got, k, off, n, total)) return;
    if (r->sink)
      r->sink(off, p, n);
    else
      std::memcpy(r->dst + off, p, n);
  }
  if (r->got.bytes() == total) complete(r, &k, "");
}

void Transport::complete(const RecvPtr& r, const Key* k, const std::string& error) {
  if (k != nullptr) bound_.erase(*k);
  r->error = error;
  posted_--;
  if (r->on_done) r->on_done(*r);
  r->done.store(true, std::memory_order_release);
}

void Transport::post(const RecvPtr& r) {
  posted_++;
  if (failed_) {
    complete(r, nullptr, failure());
    return;
  }
  int64_t now = now_ns();
  r->deadline_ns = now + cfg_.timeout_ns;
  if (r->src == kAnySource) {
    for (int s = 0; s < cfg_.size && r->src == kAnySource; s++) {
      auto it = recv_seq_.find(Stream{s, r->tag});
      if (early_.count(Key{s, r->tag, it == recv_seq_.end() ? 0 : it->second})) r->src = s;
    }
    if (r->src == kAnySource) {
      any_.push_back(r);
      return;
    }
  }
  r->probe_at_ns = now + kProbeAfterNs;
  uint64_t& next = recv_seq_[Stream{r->src, r->tag}];
  r->seq = next++;
  Key k{r->src, r->tag, r->seq};
  bound_[k] = r;
  auto e = early_.find(k);
  if (e == early_.end()) return;
  Early early = std::move(e->second);
  early_.erase(e);
  early_bytes_ -= early.got.bytes();
  early_msgs_[k.src]--;
  for (auto& part : early.parts) {
    if (r->done || bound_.find(k) == bound_.end()) break;
    fill(r, k, part.first, early.total, part.second.data(), part.second.size());
  }
}

RecvPtr Transport::post(int src, int64_t tag, void* dst, uint64_t nbytes, std::shared_ptr<void> keep,
                        std::function<void(uint64_t, const uint8_t*, uint64_t)> sink) {
  auto r = std::make_shared<Recv>();
  r->sink = std::move(sink);
  r->src = src;
  r->tag = tag;
  r->dst = static_cast<uint8_t*>(dst);
  r->nbytes = nbytes;
  r->keep = std::move(keep);
  post(r);
  return r;
}

void Transport::wait(const RecvPtr& r, const char* what) {
  for (;;) {
    if (r->done.load(std::memory_order_acquire)) {
      if (!r->error.empty()) throw std::runtime_error(r->error);
      return;
    }
    check_failed();
    int64_t now = now_ns();
    if (now >= next_check_ns_) {
      check_posted(now);
      continue;
    }
    pump_patiently(next_check_ns_ - now);
  }
  (void)what;
}

// pump_patiently is pump for a waiter: for up to yield_ns it looks without
// sleeping and yields the CPU between looks (a peer rank on the same core
// then runs at once and its message is seen without an eventfd wake-up,
// which costs tens of microseconds here), then waits in libhoma.
//
// A yield hands the CPU to whatever else is runnable on this core. A peer
// rank gives it back within its turn (up to a few hundred microseconds
// measured on 2 CPUs under load); a thread that never blocks (the daemon's
// busy-polling loop, where the scheduler put this rank on the loop's core,
// or any busy thread there) keeps it for the rest of its time slice, a
// millisecond or more measured, and then every wait paid that: a 2-rank
// all_reduce of 4 B took 1-2 ms instead of tens of microseconds for as long
// as the rank stayed there (issue 41), while a rank asleep in libhoma is
// woken by its message and runs at once. So a yield that lost the CPU for
// kLostYieldNs or more (counted in n_yield_lost) makes the waits of the
// next back-off go to libhoma's sleep without yielding, as long as they
// run on the CPU where the yield lost it (the scheduler moves ranks: one
// moved back beside its peer yields again at once): 5 ms, doubled for each
// such yield that follows within kLostYieldMemoryNs of the last (the busy
// thread is still there), up to yield_backoff_ns.
namespace {
constexpr int64_t kLostYieldNs = 1'000'000;
constexpr int64_t kYieldBackoffFirstNs = 5'000'000;
constexpr int64_t kLostYieldMemoryNs = 1'000'000'000;
}  // namespace

int Transport::pump_patiently(int64_t timeout_ns) {
  if (cfg_.yield_ns > 0 && timeout_ns > 0) {
    int64_t now = now_ns();
    if (now >= yield_off_until_ || sched_getcpu() != lost_yield_cpu_) {
      int64_t end = now + std::min(cfg_.yield_ns, timeout_ns);
      for (;;) {
        int n = pump(0);
        if (n != 0) return n;
        int64_t before = now_ns();
        sched_yield();
        now = now_ns();
        if (now - before >= kLostYieldNs) {
          n_yield_lost++;
          if (cfg_.yield_backoff_ns > 0) {
            yield_backoff_ = std::min(cfg_.yield_backoff_ns, now - last_lost_yield_ns_ > kLostYieldMemoryNs
                                                                 ? kYieldBackoffFirstNs
                                                                 : 2 * yield_backoff_);
            last_lost_yield_ns_ = now;
            lost_yield_cpu_ = sched_getcpu();
            yield_off_until_ = now + yield_backoff_;
            break;
          }
        }
        if (now >= end) break;
      }
    }
  }
  return pump(timeout_ns);
}

void Transport::check_posted(int64_t now) {
  next_check_ns_ = now + kCheckEveryNs;
  std::vector<std::pair<Key, RecvPtr>> late;
  for (auto& kv : bound_) {
    RecvPtr r = kv.second;
    if (now > r->deadline_ns) {
      late.emplace_back(kv.first, r);
    } else if (r->src >= 0 && now > r->probe_at_ns) {
      r->probe_at_ns = now + kProbeAfterNs;
      probe(r->src);
    }
  }
  for (auto& kv : late)
    complete(kv.second, &kv.first,
             "homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": a receive from rank " +
                 std::to_string(kv.first.src) + " (tag " + std::to_string(kv.first.tag) + ") did not complete within " +
                 std::to_string(cfg_.timeout_ns / 1'000'000'000) + " s");
  for (auto it = any_.begin(); it != any_.end();) {
    if (now > (*it)->deadline_ns) {
      RecvPtr r = *it;
      it = any_.erase(it);
      complete(r, nullptr,
               "homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": a receive from any rank (tag " +
                   std::to_string(r->tag) + ") did not complete within " +
                   std::to_string(cfg_.timeout_ns / 1'000'000'000) + " s");
    } else {
      ++it;
    }
  }
}

void Transport::forget_tag(int64_t tag) {
  if (tag < 0) coll_done_ = std::min(coll_done_, tag);  // later parts for it are stale
  for (int p = 0; p < cfg_.size; p++) {
    send_seq_.erase(Stream{p, tag});
    recv_seq_.erase(Stream{p, tag});
  }
}

// --------------------------------------------------------------- sending

void Transport::probe(int dst) {
  Header h{kProbe, uint32_t(cfg_.rank), 0, 0, 0, 0, key_};
  try {
    send_part(dst, h, nullptr, 0);
  } catch (const std::runtime_error&) {
    // fail() has the reason; the waiter sees it.
  }
}

void Transport::send(int dst, int64_t tag, const void* data, uint64_t nbytes) {
  check_failed();
  uint64_t seq = send_seq_[Stream{dst, tag}]++;
  Header h{kMagic, uint32_t(cfg_.rank), tag, seq, 0, nbytes, key_};
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (nbytes == 0) {
    send_part(dst, h, nullptr, 0);
    return;
  }
  for (uint64_t off = 0; off < nbytes; off += part_) {
    h.offset = off;
    send_part(dst, h, p + off, std::min(part_, nbytes - off));
  }
  n_sent++;
}

// send_part sends one part as a detached request. Its arena range comes
// back once the response has come: while too much is in flight the driver
// takes what arrives (answering the peers, whose responses free ours), so
// that two ranks sending to each other never both wait for arena space.
void Transport::send_part(int dst, const Header& h, const void* data, uint64_t n) {
  uint64_t len = sizeof h + n;
  if (inflight_msgs_ >= inflight_max_msgs_ || (inflight_bytes_ > 0 && inflight_bytes_ + len > inflight_max_bytes_)) {
    int64_t deadline = now_ns() + cfg_.timeout_ns;
    while (inflight_msgs_ >= inflight_max_msgs_ ||
           (inflight_bytes_ > 0 && inflight_bytes_ + len > inflight_max_bytes_)) {
      check_failed();
      if (now_ns() > deadline)
        fail_and_throw("homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": sends to rank " +
                       std::to_string(dst) + " were not answered within the timeout: is that rank gone?");
      pump(10'000'000);
    }
  }
  iovec iov[2] = {{const_cast<Header*>(&h), sizeof h}, {const_cast<void*>(data), size_t(n)}};
  uint64_t tag = (uint64_t(dst + 1) << 32) | len;
  int rc = homa_send(c_, &peers_[dst], iov, n ? 2 : 1, tag, HOMA_SEND_DETACHED, nullptr);
  if (rc != 0) {
    std::string why = str_status(rc);
    if (rc == HOMA_EDEAD || rc == HOMA_ECLOSED) why += ": the session has ended";
    fail_and_throw("homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": a send to rank " + std::to_string(dst) +
                   ": " + why);
  }
  inflight_bytes_ += len;
  inflight_msgs_++;
}

}  // namespace homa_torch
