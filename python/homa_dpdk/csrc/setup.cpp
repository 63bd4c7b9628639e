// setup.cpp: see transport.hpp: a group's configuration, and its set-up
// (attach to the daemon, bind a port, the rendezvous through the job's store).
#include <arpa/inet.h>
#include <dirent.h>

#include <algorithm>
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
  // A wait spins before it sleeps only where a core is to spare: on a
  // small machine (the daemon's polling core, and the ranks sharing what
  // is left) a spinning rank keeps its peer from running, and a round trip
  // measured 2-3x slower with libhoma's 50 us than with none.
  int64_t spin = env_int("HOMA_DPDK_SPIN_US", std::thread::hardware_concurrency() <= 4 ? 0 : -1);
  c.spin_ns = spin < 0 ? -1 : spin * 1000;
  return c;
}

// ------------------------------------------------------------------ set-up

Transport::Transport(const Config& cfg, const std::function<void(const std::string&, const std::string&)>& publish,
                     const std::function<std::string(const std::string&)>& lookup)
    : cfg_(cfg), msgs_(kBurst) {
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
    publish("homa_dpdk/" + std::to_string(cfg_.rank), ip + ":" + std::to_string(port_) + ":" + key);
    peers_.resize(cfg_.size);
    keys_.resize(cfg_.size);
    cports_.assign(cfg_.size, 0);
    early_msgs_.assign(cfg_.size, 0);
    for (int r = 0; r < cfg_.size; r++) {
      // "ip:port:key"
      std::string v = lookup("homa_dpdk/" + std::to_string(r));
      auto bad = [&]() { return std::runtime_error("homa_dpdk.torch: bad address of rank " + std::to_string(r) + ": " + v); };
      auto k = v.rfind(':');
      auto colon = k == std::string::npos || k == 0 ? std::string::npos : v.rfind(':', k - 1);
      if (colon == std::string::npos) throw bad();
      try {
        keys_[r] = std::stoull(v.substr(k + 1), nullptr, 16);
        int rc = homa_addr_parse(v.substr(0, colon).c_str(), uint16_t(std::stoi(v.substr(colon + 1, k - colon - 1))), &peers_[r]);
        if (rc != 0) throw bad();
      } catch (const std::logic_error&) {
        throw bad();
      }
    }
  } catch (...) {
    homa_destroy(c_);
    c_ = nullptr;
    throw;
  }
  last_call_ns_ = now_ns();
  thread_ = std::thread([this] { progress_loop(); });
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
