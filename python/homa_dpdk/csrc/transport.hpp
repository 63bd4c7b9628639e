// transport.hpp: the messages of the "homa" torch.distributed backend over
// libhoma (native/include/homa.h), and who drives them.
//
// A message is one logical transfer of bytes from one rank to another on a
// tag; it travels as one or more Homa RPCs ("parts"), each a request whose
// bytes are a Header and up to part_bytes of the message. The receiver
// copies a part straight from the receive pool into the posted buffer (or,
// if none is posted yet, into a bounded store of unexpected parts), gives
// the pool pages back and answers with a one-byte detached reply. Homa
// delivers RPCs in any order: messages of one (source, tag) stream carry
// sequence numbers, and a receive is matched to (source, tag, seq).
//
// Who may send: a rank's part is believed only if it comes from that rank's
// host address (published at rendezvous), carries that rank's key (64 random
// bits each rank publishes with its address in the job's store) and comes
// from the client port that rank's first believed message came from (a
// session keeps one client port). Anything else -- a stranger on a rank's
// host, another session of the same daemon -- is answered (its RPC ends) and
// dropped, counted in n_stranger, and never fails the group. A believed part
// is checked before use: its bytes inside its message, and not for a receive
// that has completed already (n_stale); a copy of a part that came already is
// dropped (n_duplicate), and a message completes only once each of its bytes
// has come (Spans). Unexpected parts are bounded in bytes (max_unexpected,
// all ranks) and messages (max_unexpected_msgs, per rank); a real rank past
// either, a real rank's part past its message's end or over part of one that
// came, or parts of one message that claim different lengths, fail the group
// with an error that names the rank.
//
// The set-up (setup.cpp): each rank publishes "ip:port:key:size" (its host,
// its bound port, its key, the world size it was given) in the job's store
// and reads every rank's, waiting rendezvous_ns at most in all: ranks that
// never publish (one that failed to attach, say) are named in the error,
// and a rank given another world size fails the set-up at once, both sizes
// named. No error quotes an entry: it holds a rank's key.
//
// Nothing here knows torch's ProcessGroup: the collectives (collectives.cpp)
// and the c10d surface (process_group.cpp) sit on top.
//
// transport.cpp has the messages, setup.cpp the set-up, progress.cpp who
// drives them.
//
// Threads: every libhoma call and all state below is owned by whoever holds
// the driver lock (drive_mu_): the group's progress thread, or a caller that
// runs a small operation inline or drives its own wait (Driver). Only
// submit(), wake() and the counters are safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "homa.h"

namespace homa_torch {

// Config is what a group is made from: the job's facts and the
// environment's knobs (see config_from_env).
struct Config {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int64_t timeout_ns = 300'000'000'000;  // a receive fails after this long
  std::string socket_dir = "/run/homa-dpdk/demo";  // HOMA_DPDK_SOCKET_DIR
  int port_base = 1000;                  // HOMA_DPDK_PORT_BASE
  int64_t part_bytes = 1 << 20;          // HOMA_DPDK_TORCH_PART_BYTES
  int64_t ring_bytes = 256 << 10;        // HOMA_DPDK_TORCH_RING_BYTES: all_reduce's ring from here up
  int64_t ring_parts = 1;                // HOMA_DPDK_TORCH_RING_PARTS: the ring's parts per segment, at least
                                         // (more measured no faster: 2 ranks, 1-16 MiB)
  int64_t max_unexpected = int64_t(1) << 31;  // HOMA_DPDK_TORCH_MAX_UNEXPECTED: bytes, all ranks
  int64_t max_unexpected_msgs = 65536;        // HOMA_DPDK_TORCH_MAX_UNEXPECTED_MSGS: messages, per rank
  int64_t inline_bytes = 256 << 10;      // HOMA_DPDK_TORCH_INLINE_BYTES: callers run ops up to this inline
  int64_t grace_ns = 1'000'000;          // HOMA_DPDK_TORCH_GRACE_US: progress thread stays out after a call
  int64_t yield_ns = 100'000;            // HOMA_DPDK_TORCH_YIELD_US: a waiter looks and yields this long first
  int64_t yield_backoff_ns = 100'000'000;  // HOMA_DPDK_TORCH_YIELD_BACKOFF_US: the longest a waiter sleeps in
                                           // libhoma without yielding after a yield lost the CPU (0: never)
  int64_t spin_ns = -1;                  // HOMA_DPDK_SPIN_US: libhoma's spin before it sleeps (-1: its default;
                                         // unset: 0 on machines of 4 CPUs or fewer)
  int64_t rendezvous_ns = 30'000'000'000;  // HOMA_DPDK_TORCH_RENDEZVOUS_S: how long the set-up waits for the
                                           // other ranks' entries in the job's store (at most timeout_ns)
};

// config_from_env fills the knobs from the environment; an unparsable
// value throws std::invalid_argument naming the variable.
Config config_from_env(int rank, int size, int64_t timeout_ns);

// The header of every part, little-endian, 48 bytes.
struct __attribute__((packed)) Header {
  uint32_t magic;   // kMagic (data) or kProbe
  uint32_t src;     // the sending rank
  int64_t tag;      // the application's tag (>= 0) or a collective's (< 0)
  uint64_t seq;     // the message's number in the (src, tag) stream
  uint64_t offset;  // of this part in the message's bytes
  uint64_t total;   // the message's length in bytes
  uint64_t key;     // the sending rank's key, from the job's store
};
constexpr uint32_t kMagic = 0x484F4D41;  // "HOMA"
constexpr uint32_t kProbe = 0x50524F42;  // "PROB": are you there? (answered, then ignored)
constexpr int kAnySource = -1;

// Spans is the set of a message's bytes received so far, from the parts'
// (offset, length): a part is new, a duplicate (every byte of it came
// already: dropped), or overlaps bytes that came (no sender does that).
// Parts that come in order only move prefix_; those ahead of a gap are kept
// in rest_ until the gap fills.
class Spans {
 public:
  enum Verdict { kNew, kDuplicate, kOverlap };
  // add records [off, off + n) if it is new; n > 0, off + n without overflow.
  Verdict add(uint64_t off, uint64_t n);
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t prefix_ = 0;  // [0, prefix_) came
  std::vector<std::pair<uint64_t, uint64_t>> rest_;  // [begin, end) past prefix_: sorted, apart
  uint64_t bytes_ = 0;
};

// Recv is a posted receive. Created by whoever posts it; filled and
// completed by the driver. dst points into memory that `keep` owns.
struct Recv {
  int src = kAnySource;     // kAnySource until a message binds it
  int64_t tag = 0;
  uint64_t seq = 0;
  uint8_t* dst = nullptr;
  uint64_t nbytes = 0;
  Spans got;                   // the bytes that came: it completes once all have
  std::shared_ptr<void> keep;  // what owns dst (a tensor's storage)
  std::atomic<bool> done{false};  // set last, by the driver
  std::string error;           // non-empty: failed (read after done)
  int64_t deadline_ns = 0;     // fails past this
  int64_t probe_at_ns = 0;     // probes its source at this time
  std::function<void(Recv&)> on_done;  // run by the driver when done or failed
  // sink, when set, takes each part's bytes instead of a copy into dst
  // (offset in the message, the bytes, their length): the ring all_reduce
  // reduces straight from the receive pool.
  std::function<void(uint64_t, const uint8_t*, uint64_t)> sink;
};
using RecvPtr = std::shared_ptr<Recv>;

int64_t now_ns();

// JobStore is the job's store (c10d's) as the set-up uses it: set a key,
// say whether a key is there without waiting for it, get a key that is.
struct JobStore {
  std::function<void(const std::string&, const std::string&)> set;
  std::function<bool(const std::string&)> has;
  std::function<std::string(const std::string&)> get;
};

class Transport {
 public:
  // Attaches to this rank's host, binds a port, publishes its entry in the
  // job's store and reads every rank's (rendezvous), and starts the
  // progress thread. Throws std::runtime_error.
  Transport(const Config& cfg, const JobStore& store);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  const Config& config() const { return cfg_; }
  int rank() const { return cfg_.rank; }
  int size() const { return cfg_.size; }
  uint64_t part_bytes() const { return part_; }

  // ---- any thread
  // submit queues op for the driver (the progress thread, or a caller
  // driving a wait); ops run one at a time, in submission order.
  void submit(std::function<void()> op);
  // try_inline runs op now in the calling thread if nothing is queued or
  // running and the driver lock is free; false if it did not.
  bool try_inline(const std::function<void()>& op);
  // drive_until drives progress in the calling thread (taking turns with
  // the progress thread) until done() is true; spins spin_ns first.
  void drive_until(const std::function<bool()>& done);
  // driving_here: the calling thread holds the driver lock (it runs an
  // operation, or a future's callback that the driver runs).
  static bool driving_here();
  // The group's failure, empty while it works.
  std::string failure() const;
  void close();

  // ---- the driver only
  void send(int dst, int64_t tag, const void* data, uint64_t nbytes);
  // post posts r (its src, tag, dst, nbytes, keep, on_done set): bound to
  // the next message of (src, tag), or from any source to the first to come.
  void post(const RecvPtr& r);
  RecvPtr post(int src, int64_t tag, void* dst, uint64_t nbytes, std::shared_ptr<void> keep = nullptr,
               std::function<void(uint64_t, const uint8_t*, uint64_t)> sink = nullptr);
  // wait drives progress until r is done; throws std::runtime_error (what
  // it was, for the message) if r or the group failed.
  void wait(const RecvPtr& r, const char* what);
  // forget_tag drops the stream counters of a tag no message will use again.
  void forget_tag(int64_t tag);
  [[noreturn]] void fail_and_throw(const std::string& why);
  void fail(const std::string& why);
  void check_failed();

  // Counters (read from any thread; approximate).
  std::atomic<uint64_t> n_sent{0}, n_received{0}, n_unexpected{0}, n_inline{0}, n_queued{0}, n_dropped{0};
  // Requests not believed (see the top of this file), believed parts for
  // receives already completed or collectives already ended, and believed
  // parts that bring no byte not received already (a copy of a part).
  std::atomic<uint64_t> n_stranger{0}, n_stale{0}, n_duplicate{0};
  // Yields of a waiter that lost the CPU for 1 ms or more: to a thread
  // that keeps it for a time slice (each starts a back-off: pump_patiently).
  std::atomic<uint64_t> n_yield_lost{0};

 private:
  struct Key {
    int src;
    int64_t tag;
    uint64_t seq;
    bool operator==(const Key& o) const { return src == o.src && tag == o.tag && seq == o.seq; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.tag) * 31 + std::hash<uint64_t>()(k.seq) * 131 + size_t(k.src);
    }
  };
  struct Stream {
    int peer;
    int64_t tag;
    bool operator==(const Stream& o) const { return peer == o.peer && tag == o.tag; }
  };
  struct StreamHash {
    size_t operator()(const Stream& s) const { return std::hash<int64_t>()(s.tag) * 31 + size_t(s.peer); }
  };
  // Parts that arrived before their receive was posted.
  struct Early {
    uint64_t total = 0;  // the first part's; every part must claim the same
    Spans got;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> parts;
  };

  void attach(std::string* ip);
  void bind_port();
  void rendezvous(const JobStore& store);
  std::string missing(const JobStore& store, int from, int64_t waited_ns) const;
  void progress_loop();
  void drain();
  bool run_queued();
  int pump(int64_t timeout_ns);
  int pump_patiently(int64_t timeout_ns);
  void take(homa_msg& m);
  bool believe(const Header& h, const homa_msg& m);
  void on_data(const Header& h, const uint8_t* bytes, uint64_t n);
  bool stale(const Key& k) const;
  void keep_early(const Key& k, const Header& h, const uint8_t* p, uint64_t n);
  bool admit(Spans& got, const Key& k, uint64_t off, uint64_t n, uint64_t total);
  void on_failed(const homa_msg& m);
  void fill(const RecvPtr& r, const Key& k, uint64_t off, uint64_t total, const uint8_t* p, uint64_t n);
  void complete(const RecvPtr& r, const Key* k, const std::string& error);
  RecvPtr bind_any(int src, int64_t tag, uint64_t seq);
  void check_posted(int64_t now);
  void probe(int dst);
  void send_part(int dst, const Header& h, const void* data, uint64_t n);
  void answer(const homa_msg& m, bool stranger);
  std::string who(const homa_addr& a) const;

  Config cfg_;
  homa_client* c_ = nullptr;
  uint64_t part_ = 0;          // bytes of a tensor per part
  uint16_t port_ = 0;
  uint64_t key_ = 0;               // this rank's key, in every header it sends
  std::vector<homa_addr> peers_;   // each rank's host and bound port, from the store
  std::vector<uint64_t> keys_;     // each rank's key, from the store
  std::vector<uint16_t> cports_;   // each rank's client port, from its first believed part (0: none yet)

  // The driver's state.
  std::unordered_map<Stream, uint64_t, StreamHash> send_seq_, recv_seq_;
  std::unordered_map<Key, RecvPtr, KeyHash> bound_;
  std::deque<RecvPtr> any_;
  std::unordered_map<Key, Early, KeyHash> early_;
  uint64_t early_bytes_ = 0;
  std::vector<uint64_t> early_msgs_;  // entries of early_ by source rank
  int64_t coll_done_ = 0;             // the last collective tag forgotten (collectives end in order)
  uint64_t inflight_bytes_ = 0;  // sent, response not yet come
  uint64_t inflight_msgs_ = 0;
  uint64_t inflight_max_bytes_ = 0;
  uint64_t inflight_max_msgs_ = 256;
  int64_t next_check_ns_ = 0;
  int64_t yield_off_until_ = 0;  // waits do not yield before this (pump_patiently)
  int64_t yield_backoff_ = 0;    // the last back-off (pump_patiently)
  int64_t last_lost_yield_ns_ = 0;  // when a yield last lost the CPU
  int lost_yield_cpu_ = -1;         // and on which CPU
  std::vector<homa_msg> msgs_;

  // Shared between threads.
  std::mutex drive_mu_;           // who drives
  std::atomic<int> want_{0};      // callers waiting for drive_mu_
  std::atomic<int> callers_in_{0};  // callers in drive_until
  std::mutex q_mu_;
  std::condition_variable q_cv_;
  std::deque<std::function<void()>> queue_;
  std::atomic<int> queued_{0};
  std::atomic<int> posted_{0};    // receives posted, not done
  std::atomic<int64_t> last_call_ns_{0};
  std::atomic<bool> stop_{false};
  mutable std::mutex fail_mu_;
  std::string failure_;
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

}  // namespace homa_torch
