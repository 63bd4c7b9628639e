// setup.cpp: see transport.hpp: a group's configuration, and its set-up
// (attach to the daemon, bind a port, the rendezvous through the job's store).
#include <arpa/inet.h>
#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <random>

#include "transport.hpp"

namespace homa_torch {

namespace {

constexpr int kBurst = 64;

int64_t env_int(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return def;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != 0)
    throw std::invalid_argument(std::string("homa_dpdk.torch: ") + name + "=" + v + " is not an integer");
  return x;
}

std::string str_status(int rc) { return homa_strerror(rc); }

// entry_key is the name of rank r's entry, "ip:port:key:size", in the job's store.
std::string entry_key(int r) { return "homa_dpdk/" + std::to_string(r); }

// guarded runs a call on the job's store for rank me, about rank r's entry:
// its failure (the store's process gone, say) becomes an error that says so.
template <typename F>
auto guarded(int me, int r, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    throw std::runtime_error("homa_dpdk.torch: rank " + std::to_string(me) + ": the job's store failed at " +
                             entry_key(r) + " (is rank 0, whose process serves a TCPStore, gone?): " + e.what());
  }
}

// parse_unsigned reads all of s as a number in base (no sign, no space).
bool parse_unsigned(const std::string& s, int base, uint64_t* v) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v, base);
  return ec == std::errc() && end == s.data() + s.size();
}

// parse_entry reads a rank's entry, "ip:port:key:size" (fields from the
// right: ip may be IPv6), and says what is wrong with it, or nullptr. What
// it says never quotes the entry: it holds the rank's key.
const char* parse_entry(const std::string& v, homa_addr* a, uint64_t* key, int* size) {
  size_t c3 = v.rfind(':');
  size_t c2 = c3 == std::string::npos || c3 == 0 ? std::string::npos : v.rfind(':', c3 - 1);
  size_t c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : v.rfind(':', c2 - 1);
  if (c1 == std::string::npos || c1 == 0) return "it is not ip:port:key:size";
  uint64_t port = 0, n = 0;
  if (!parse_unsigned(v.substr(c1 + 1, c2 - c1 - 1), 10, &port) || port == 0 || port > 0xffff)
    return "its port is not a number from 1 to 65535";
  if (c3 - c2 - 1 != 16 || !parse_unsigned(v.substr(c2 + 1, c3 - c2 - 1), 16, key))
    return "its key is not 16 hexadecimal digits";
  if (!parse_unsigned(v.substr(c3 + 1), 10, &n) || n == 0 || n > uint64_t(INT_MAX))
    return "its world size is not a positive number";
  *size = int(n);
  if (homa_addr_parse(v.substr(0, c1).c_str(), uint16_t(port), a) != 0) return "its address does not parse";
  return nullptr;
}

}  // namespace

Config config_from_env(int rank, int size, int64_t timeout_ns) {
  Config c;
  c.rank = rank;
  c.size = size;
  c.timeout_ns = timeout_ns > 0 ? timeout_ns : c.timeout_ns;
  c.local_rank = int(env_int("LOCAL_RANK", rank));
  if (const char* d = std::getenv("HOMA_DPDK_SOCKET_DIR"); d && *d) c.socket_dir = d;
  c.port_base = int(env_int("HOMA_DPDK_PORT_BASE", c.port_base));
  c.part_bytes = std::max<int64_t>(1, env_int("HOMA_DPDK_TORCH_PART_BYTES", c.part_bytes));
  c.ring_bytes = env_int("HOMA_DPDK_TORCH_RING_BYTES", c.ring_bytes);
  c.ring_parts = env_int("HOMA_DPDK_TORCH_RING_PARTS", c.ring_parts);
  c.max_unexpected = env_int("HOMA_DPDK_TORCH_MAX_UNEXPECTED", c.max_unexpected);
  c.max_unexpected_msgs = env_int("HOMA_DPDK_TORCH_MAX_UNEXPECTED_MSGS", c.max_unexpected_msgs);
  c.inline_bytes = env_int("HOMA_DPDK_TORCH_INLINE_BYTES", c.inline_bytes);
  c.grace_ns = env_int("HOMA_DPDK_TORCH_GRACE_US", c.grace_ns / 1000) * 1000;
  c.yield_ns = env_int("HOMA_DPDK_TORCH_YIELD_US", c.yield_ns / 1000) * 1000;
  c.yield_backoff_ns = std::max<int64_t>(0, env_int("HOMA_DPDK_TORCH_YIELD_BACKOFF_US", c.yield_backoff_ns / 1000)) * 1000;
  int64_t wait_s = env_int("HOMA_DPDK_TORCH_RENDEZVOUS_S", c.rendezvous_ns / 1'000'000'000);
  if (wait_s < 1) throw std::invalid_argument("homa_dpdk.torch: HOMA_DPDK_TORCH_RENDEZVOUS_S must be 1 or more");
  c.rendezvous_ns = std::min<int64_t>(wait_s, 1'000'000'000) * 1'000'000'000;
  // A wait spins before it sleeps only where a core is to spare: on a
  // small machine (the daemon's polling core, and the ranks sharing what
  // is left) a spinning rank keeps its peer from running, and a round trip
  // measured 2-3x slower with libhoma's 50 us than with none.
  int64_t spin = env_int("HOMA_DPDK_SPIN_US", std::thread::hardware_concurrency() <= 4 ? 0 : -1);
  c.spin_ns = spin < 0 ? -1 : spin * 1000;
  return c;
}

// ------------------------------------------------------------------ set-up

Transport::Transport(const Config& cfg, const JobStore& store) : cfg_(cfg), msgs_(kBurst) {
  std::string ip;
  attach(&ip);
  try {
    bind_port();
    uint64_t mm = homa_max_message(c_);
    part_ = std::min<uint64_t>(uint64_t(cfg_.part_bytes), mm > sizeof(Header) ? mm - sizeof(Header) : 1);
    inflight_max_bytes_ = std::max<uint64_t>(homa_arena_size(c_) / 2, part_ + sizeof(Header));
    std::random_device rd;  // the kernel's random bytes
    key_ = uint64_t(rd()) << 32 | rd();
    char key[17];
    std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(key_));
    std::string entry = ip + ":" + std::to_string(port_) + ":" + key + ":" + std::to_string(cfg_.size);
    guarded(cfg_.rank, cfg_.rank, [&] { store.set(entry_key(cfg_.rank), entry); });
    peers_.resize(cfg_.size);
    keys_.resize(cfg_.size);
    cports_.assign(cfg_.size, 0);
    early_msgs_.assign(cfg_.size, 0);
    rendezvous(store);
  } catch (...) {
    homa_destroy(c_);
    c_ = nullptr;
    throw;
  }
  last_call_ns_ = now_ns();
  thread_ = std::thread([this] { progress_loop(); });
}

// rendezvous reads every rank's entry, "ip:port:key:size", in rank order,
// waiting for each as long as is left of rendezvous_ns (or of the group's
// timeout, if shorter) from the start: ranks that have not published by
// then are named in the error, not waited for until torch's timeout (30
// minutes by default). A rank started with another world size, or an entry
// that does not parse, fails at once; the entry's text is never shown (it
// holds the rank's key).
void Transport::rendezvous(const JobStore& store) {
  int64_t wait_ns = std::min(cfg_.rendezvous_ns, cfg_.timeout_ns);
  int64_t start = now_ns(), deadline = start + wait_ns;
  std::string me = "homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": ";
  for (int r = 0; r < cfg_.size; r++) {
    int64_t nap = 1'000'000;
    while (!guarded(cfg_.rank, r, [&] { return store.has(entry_key(r)); })) {
      int64_t now = now_ns();
      if (now >= deadline) {
        std::string late = missing(store, r, now - start);
        if (late.empty()) continue;  // it came just now
        throw std::runtime_error(me + late);
      }
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(nap, deadline - now)));
      nap = std::min<int64_t>(nap * 2, 50'000'000);
    }
    std::string v = guarded(cfg_.rank, r, [&] { return store.get(entry_key(r)); });
    int size = 0;
    if (const char* bad = parse_entry(v, &peers_[r], &keys_[r], &size))
      throw std::runtime_error(me + "the entry of rank " + std::to_string(r) + " in the job's store (" + entry_key(r) +
                               ") is malformed: " + bad +
                               " (its text is not shown: it holds that rank's key); do all ranks run the same "
                               "homa_dpdk?");
    if (size != cfg_.size)
      throw std::runtime_error(me + "rank " + std::to_string(r) + " was started with a world size of " +
                               std::to_string(size) + ", this rank with " + std::to_string(cfg_.size) +
                               ": every rank of a job needs the same WORLD_SIZE");
  }
}

// missing names the ranks from `from` on whose entries are not in the
// store, for the error of a rendezvous that waited waited_ns for them
// (empty: they are all there now).
std::string Transport::missing(const JobStore& store, int from, int64_t waited_ns) const {
  std::vector<int> gone;
  for (int r = from; r < cfg_.size; r++)
    if (!guarded(cfg_.rank, r, [&] { return store.has(entry_key(r)); })) gone.push_back(r);
  if (gone.empty()) return "";
  constexpr size_t kNamed = 8;
  std::string names;
  for (size_t i = 0; i < gone.size() && i < kNamed; i++) {
    if (i > 0) names += i + 1 == gone.size() ? " and " : ", ";
    names += std::to_string(gone[i]);
  }
  if (gone.size() > kNamed) names += " and " + std::to_string(gone.size() - kNamed) + " more";
  bool one = gone.size() == 1;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f", double(waited_ns) / 1e9);
  return std::string(one ? "rank " : "ranks ") + names + (one ? " has" : " have") + " not published " +
         (one ? "its" : "their") + " address in the job's store after " + secs +
         " s (HOMA_DPDK_TORCH_RENDEZVOUS_S): did " + (one ? "it" : "they") +
         " fail before attaching to the daemon (see " + (one ? "its" : "their") + " output), or start later?";
}

Transport::~Transport() {
  close();
  if (c_ != nullptr) homa_destroy(c_);
}

// attach connects to the (local_rank mod hosts)-th <ipv4>.sock of the
// socket directory, in address order, and says which host that is.
void Transport::attach(std::string* ip) {
  DIR* d = opendir(cfg_.socket_dir.c_str());
  if (d == nullptr)
    throw std::runtime_error("homa_dpdk.torch: cannot list the daemon's sockets in " + cfg_.socket_dir +
                             " (HOMA_DPDK_SOCKET_DIR): " + std::strerror(errno));
  std::vector<std::pair<uint32_t, std::string>> hosts;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() <= 5 || n.compare(n.size() - 5, 5, ".sock") != 0) continue;
    in_addr a;
    std::string h = n.substr(0, n.size() - 5);
    if (inet_pton(AF_INET, h.c_str(), &a) == 1) hosts.emplace_back(ntohl(a.s_addr), h);
  }
  closedir(d);
  if (hosts.empty())
    throw std::runtime_error("homa_dpdk.torch: no host sockets (<ip>.sock) in " + cfg_.socket_dir +
                             " (HOMA_DPDK_SOCKET_DIR)");
  std::sort(hosts.begin(), hosts.end());
  *ip = hosts[size_t(cfg_.local_rank) % hosts.size()].second;
  std::string path = cfg_.socket_dir + "/" + *ip + ".sock";
  homa_options o;
  homa_options_init(&o);
  if (cfg_.spin_ns >= 0) o.spin_ns = cfg_.spin_ns;
  o.op_timeout_ns = cfg_.timeout_ns;
  o.max_sleep_ns = 100'000'000;
  char err[256] = {0};
  int rc = homa_attach(path.c_str(), &o, &c_, err, sizeof err);
  if (rc != 0)
    throw std::runtime_error("homa_dpdk.torch: rank " + std::to_string(cfg_.rank) + ": cannot attach to " + path +
                             ": " + str_status(rc) + (err[0] ? std::string(": ") + err : std::string()));
}

// bind_port binds the first free port from port_base + rank on (another
// group of this job on the same host may hold it): the port published is
// the one bound, so no rank needs to guess another's.
void Transport::bind_port() {
  int first = cfg_.port_base + cfg_.rank;
  for (int p = first; p < std::min(first + 1024, HOMA_MAX_SERVER_PORT + 1); p++) {
    int rc = homa_bind(c_, uint16_t(p));
    if (rc == 0) {
      port_ = uint16_t(p);
      return;
    }
    if (rc != HOMA_ERR_PORT_IN_USE)
      throw std::runtime_error("homa_dpdk.torch: bind port " + std::to_string(p) + ": " + str_status(rc));
  }
  throw std::runtime_error("homa_dpdk.torch: no free server port in " + std::to_string(first) + ".." +
                           std::to_string(first + 1023) + " (HOMA_DPDK_PORT_BASE)");
}

}  // namespace homa_torch
