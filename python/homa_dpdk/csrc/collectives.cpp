// collectives.cpp: see collectives.hpp.
//
// all_reduce: recursive doubling (log2(n) exchanges of the whole tensor;
// for a group of 2 one exchange: each rank sends its tensor and takes the
// other's) below Config::ring_bytes; in groups that are not a power of two
// the ranks above the largest power of two first fold into the ones below
// and get the result back at the end. From ring_bytes up: the ring
// (reduce-scatter, then all-gather; each rank sends and receives 2(n-1)/n
// of the tensor) in parts of the transport's part size, pipelined: a part
// goes on to the right as soon as it has come from the left and been
// reduced, so that the steps overlap. Every rank ends with the same bits:
// doubling combines two equal partial results commutatively, and in the
// ring each segment is reduced on one rank and passed on from there.
#include "collectives.hpp"

#include <algorithm>
#include <cstring>

namespace homa_torch {

namespace {

// TagScope forgets a collective's stream counters when it ends.
struct TagScope {
  Transport& t;
  int64_t tag;
  ~TagScope() { t.forget_tag(tag); }
};

template <typename T>
void add_loop(T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; i++) a[i] += b[i];
}

}  // namespace

void combine(at::Tensor& acc, const at::Tensor& x, Reduce op) {
  if (acc.scalar_type() == at::kBool) {
    switch (op) {
      case Reduce::PRODUCT:
      case Reduce::MIN:
      case Reduce::BAND:
        acc.logical_and_(x);
        return;
      case Reduce::BXOR:
        acc.logical_xor_(x);
        return;
      default:
        acc.logical_or_(x);
        return;
    }
  }
  switch (op) {
    case Reduce::SUM:
    case Reduce::AVG:
      // Small tensors of the common types skip ATen's dispatch (a few µs).
      if (acc.numel() <= 4096 && acc.is_contiguous() && x.is_contiguous()) {
        switch (acc.scalar_type()) {
          case at::kFloat:
            return add_loop(acc.data_ptr<float>(), x.data_ptr<float>(), acc.numel());
          case at::kDouble:
            return add_loop(acc.data_ptr<double>(), x.data_ptr<double>(), acc.numel());
          case at::kInt:
            return add_loop(acc.data_ptr<int32_t>(), x.data_ptr<int32_t>(), acc.numel());
          case at::kLong:
            return add_loop(acc.data_ptr<int64_t>(), x.data_ptr<int64_t>(), acc.numel());
          default:
            break;
        }
      }
      acc.add_(x);
      return;
    case Reduce::PRODUCT:
      acc.mul_(x);
      return;
    case Reduce::MIN:
      at::minimum_out(acc, acc, x);
      return;
    case Reduce::MAX:
      at::maximum_out(acc, acc, x);
      return;
    case Reduce::BAND:
      acc.bitwise_and_(x);
      return;
    case Reduce::BOR:
      acc.bitwise_or_(x);
      return;
    case Reduce::BXOR:
      acc.bitwise_xor_(x);
      return;
  }
  throw std::runtime_error("homa_dpdk.torch: unsupported reduction op " + std::to_string(int(op)));
}

void average(at::Tensor& acc, int n) {
  if (acc.is_floating_point() || acc.is_complex())
    acc.div_(n);
  else
    acc.div_(n, "floor");
}

// ------------------------------------------------------------- helpers

Collectives::Incoming Collectives::post_into(int src, int64_t tag, const at::Tensor& target) {
  Incoming in;
  in.target = target;
  at::Tensor dst = target;
  if (!target.is_contiguous()) {
    in.stage = at::empty(target.sizes(), target.options());
    dst = in.stage;
  }
  in.r = t_.post(src, tag, dst.numel() ? dst.data_ptr() : nullptr, dst.nbytes());
  return in;
}

void Collectives::finish(Incoming& in, const char* what) {
  t_.wait(in.r, what);
  if (in.stage.defined()) in.target.copy_(in.stage);
}

void Collectives::send(const at::Tensor& t, int dst, int64_t tag) {
  at::Tensor c = t.contiguous();
  t_.send(dst, tag, c.numel() ? c.data_ptr() : nullptr, c.nbytes());
}

RecvPtr Collectives::make_recv(const at::Tensor& t, int src, int64_t tag,
                               std::function<void(const std::string&)> done) {
  auto r = std::make_shared<Recv>();
  r->src = src;
  r->tag = tag;
  at::Tensor dst = t.is_contiguous() ? t : at::empty(t.sizes(), t.options());
  r->dst = static_cast<uint8_t*>(dst.numel() ? dst.data_ptr() : nullptr);
  r->nbytes = dst.nbytes();
  r->keep = std::make_shared<at::Tensor>(dst);
  at::Tensor target = t;
  bool staged = !t.is_contiguous();
  r->on_done = [target, dst, staged, done](Recv& rr) mutable {
    std::string err = rr.error;
    if (err.empty() && staged) {
      try {
        target.copy_(dst);
      } catch (const std::exception& e) {
        err = e.what();
      }
    }
    done(err);
  };
  return r;
}

// exchange: every rank sends ins[r] to rank r and receives outs[r] from it
// (undefined: nothing that way); its own ins goes to its own outs. Receives
// are posted first, so what arrives goes straight into place; sends are
// staggered (rank r sends to r+1 first) so no rank gets everything at once.
void Collectives::exchange(int64_t tag, std::vector<at::Tensor> outs, const std::vector<at::Tensor>& ins) {
  int n = t_.size(), me = t_.rank();
  std::vector<Incoming> recvs;
  for (int r = 0; r < n; r++)
    if (r != me && outs[r].defined()) recvs.push_back(post_into(r, tag, outs[r]));
  for (int k = 1; k < n; k++) {
    int r = (me + k) % n;
    if (ins[r].defined()) send(ins[r], r, tag);
  }
  if (outs[me].defined() && ins[me].defined()) outs[me].copy_(ins[me]);
  for (auto& in : recvs) finish(in, "a receive");
}

// ---------------------------------------------------------- collectives

void Collectives::barrier() {
  int64_t tag = next_tag();
  TagScope ts{t_, tag};
  int n = t_.size(), me = t_.rank();
  // Dissemination: log2(n) rounds of empty messages.
  for (int k = 1; k < n; k *= 2) {
    RecvPtr r = t_.post((me - k + n) % n, tag, nullptr, 0);
    t_.send((me + k) % n, tag, nullptr, 0);
    t_.wait(r, "the barrier");
  }
}

// broadcast: a binomial tree from the root, in parts: a rank passes each
// part on to its children as soon as it has it.
void Collectives::broadcast(at::Tensor& t, int root) {
  int64_t tag = next_tag();
  TagScope ts{t_, tag};
  int n = t_.size(), me = t_.rank();
  if (n == 1) return;
  at::Tensor acc = t.is_contiguous() ? t : t.contiguous();
  uint8_t* base = static_cast<uint8_t*>(acc.numel() ? acc.data_ptr() : nullptr);
  uint64_t total = acc.nbytes(), part = t_.part_bytes();
  int rel = (me - root + n) % n;
  int mask = 1, parent = -1;
  while (mask < n) {
    if (rel & mask) {
      parent = (me - mask + n) % n;
      break;
    }
    mask <<= 1;
  }
  std::vector<int> children;
  for (int m = mask >> 1; m > 0; m >>= 1)
    if (rel + m < n) children.push_back((me + m) % n);
  uint64_t parts = total == 0 ? 1 : (total + part - 1) / part;
  std::vector<RecvPtr> rs;
  if (parent >= 0)
    for (uint64_t j = 0; j < parts; j++) {
      uint64_t off = j * part;
      rs.push_back(t_.post(parent, tag, base ? base + off : nullptr, std::min(part, total - off)));
    }
  for (uint64_t j = 0; j < parts; j++) {
    uint64_t off = j * part, len = std::min(part, total - off);
    if (parent >= 0) t_.wait(rs[j], "broadcast");
    for (int c : children) t_.send(c, tag, base ? base + off : nullptr, len);
  }
  if (!acc.is_same(t)) t.copy_(acc);
}

void Collectives::allreduce(at::Tensor& t, Reduce op) {
  int n = t_.size();
  int64_t tag = next_tag();
  TagScope ts{t_, tag};
  if (n == 1) return;
  at::Tensor acc = t.is_contiguous() ? t : t.contiguous();
  at::Tensor flat = acc.view(-1);
  if (flat.numel() >= n && int64_t(flat.nbytes()) >= t_.config().ring_bytes)
    ring_allreduce(flat, op, tag);
  else
    doubling_allreduce(flat, op, tag);
  if (op == Reduce::AVG) average(flat, n);
  if (!acc.is_same(t)) t.copy_(acc);
}

void Collectives::doubling_allreduce(at::Tensor& flat, Reduce op, int64_t tag) {
  int n = t_.size(), me = t_.rank();
  int p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  int extra = n - p2;
  void* data = flat.numel() ? flat.data_ptr() : nullptr;
  uint64_t nb = flat.nbytes();
  at::Tensor tmp = at::empty_like(flat);
  void* tdata = tmp.numel() ? tmp.data_ptr() : nullptr;
  if (me >= p2) {  // fold into rank me - p2, and take the result from it
    RecvPtr r = t_.post(me - p2, tag, data, nb);
    t_.send(me - p2, tag, data, nb);
    t_.wait(r, "all_reduce");
    return;
  }
  if (me < extra) {
    RecvPtr r = t_.post(me + p2, tag, tdata, nb);
    t_.wait(r, "all_reduce");
    combine(flat, tmp, op);
  }
  for (int k = 1; k < p2; k *= 2) {
    int peer = me ^ k;
    RecvPtr r = t_.post(peer, tag, tdata, nb);
    t_.send(peer, tag, data, nb);
    t_.wait(r, "all_reduce");
    combine(flat, tmp, op);
  }
  if (me < extra) t_.send(me + p2, tag, data, nb);
}

void Collectives::ring_allreduce(at::Tensor& flat, Reduce op, int64_t tag) {
  int n = t_.size(), me = t_.rank();
  int right = (me + 1) % n, left = (me - 1 + n) % n;
  int64_t numel = flat.numel(), es = flat.element_size();
  int64_t base = numel / n, rem = numel % n;
  auto seg_off = [&](int i) { return i * base + std::min<int64_t>(i, rem); };
  auto seg_len = [&](int i) { return base + (i < rem ? 1 : 0); };
  // Elements per part: the transport's part size, or smaller so that a
  // segment has at least HOMA_DPDK_TORCH_RING_PARTS parts (down to 64 KiB).
  // A part goes on as soon as it is reduced, so more parts overlap a
  // mid-sized all_reduce's steps more; but each part is an RPC, and 4 or 8
  // measured no faster than 1 (2 ranks, 1-16 MiB): the default is 1.
  int64_t parts_min = std::max<int64_t>(1, t_.config().ring_parts);
  int64_t part_bytes =
      std::min<int64_t>(int64_t(t_.part_bytes()), std::max<int64_t>(64 << 10, base * es / parts_min));
  int64_t ce = std::max<int64_t>(1, part_bytes / es);
  auto chunks = [&](int i) { return std::max<int64_t>(1, (seg_len(i) + ce - 1) / ce); };
  uint8_t* fb = static_cast<uint8_t*>(flat.data_ptr());
  // A part j of segment i: elements [seg_off(i) + j*ce, +len).
  auto part = [&](int i, int64_t j, int64_t* off, int64_t* len) {
    *off = j * ce;
    *len = std::max<int64_t>(0, std::min(ce, seg_len(i) - j * ce));
  };
  // Post every receive first. A reduce-scatter part is reduced into its
  // segment straight from the receive pool as it comes (no staging copy;
  // this rank sends that segment on only after it waited for the part);
  // an all-gather part is copied into its segment (its bytes can only come
  // after this rank sent its share of that segment: no overwrite).
  std::vector<std::vector<RecvPtr>> rs(n - 1), ag(n - 1);
  auto options = flat.options();
  for (int s = 0; s < n - 1; s++) {
    int in = (me - s - 1 + 2 * n) % n;
    for (int64_t j = 0; j < chunks(in); j++) {
      int64_t off, len;
      part(in, j, &off, &len);
      int64_t first = seg_off(in) + off;
      auto sink = [flat, first, es, op, options](uint64_t boff, const uint8_t* p, uint64_t nb) {
        if (nb == 0) return;
        at::Tensor a = flat.narrow(0, first + int64_t(boff) / es, int64_t(nb) / es);
        at::Tensor x = at::from_blob(const_cast<uint8_t*>(p), {int64_t(nb) / es}, options);
        // The pool's bytes follow a 40-byte header: 8-aligned. Wider
        // elements (complex128 is 16) get an aligned copy first.
        if (reinterpret_cast<uintptr_t>(p) % uintptr_t(es) != 0) x = x.clone();
        combine(a, x, op);
      };
      rs[s].push_back(t_.post(left, tag, fb + first * es, len * es, nullptr, sink));
    }
  }
  for (int s = 0; s < n - 1; s++) {
    int in = (me - s + n) % n;
    for (int64_t j = 0; j < chunks(in); j++) {
      int64_t off, len;
      part(in, j, &off, &len);
      ag[s].push_back(t_.post(left, tag, fb + (seg_off(in) + off) * es, len * es));
    }
  }
  for (int64_t j = 0; j < chunks(me); j++) {
    int64_t off, len;
    part(me, j, &off, &len);
    t_.send(right, tag, fb + (seg_off(me) + off) * es, len * es);
  }
  for (int s = 0; s < n - 1; s++) {  // reduce-scatter
    int in = (me - s - 1 + 2 * n) % n;
    for (int64_t j = 0; j < chunks(in); j++) {
      int64_t off, len;
      part(in, j, &off, &len);
      t_.wait(rs[s][j], "all_reduce (ring)");  // reduced as it came
      t_.send(right, tag, fb + (seg_off(in) + off) * es, len * es);  // its next step, or the all-gather's first
    }
  }
  for (int s = 0; s < n - 2; s++) {  // all-gather
    int in = (me - s + n) % n;
    for (int64_t j = 0; j < chunks(in); j++) {
      int64_t off, len;
      part(in, j, &off, &len);
      t_.wait(ag[s][j], "all_reduce (ring)");
      t_.send(right, tag, fb + (seg_off(in) + off) * es, len * es);
    }
  }
  for (auto& r : ag[n - 2]) t_.wait(r, "all_reduce (ring)");
}

void Collectives::reduce(at::Tensor& t, int root, Reduce op) {
  int64_t tag = next_tag();
  TagScope ts{t_, tag};
  int n = t_.size(), me = t_.rank();
  if (me != root) {
    send(t, root, tag);
    return;
  }
  at::Tensor acc = t.contiguous().clone();
  std::vector<at::Tensor> parts(n);
  std::vector<Incoming> recvs(n);
  for (int r = 0; r < n; r++)
    if (r != me) {
      parts[r] = at::empty_like(acc);
      recvs[r] = post_into(r, tag, parts[r]);
    }
  for (int r = 0; r < n; r++)  // rank order: every run adds alike
    if (r != me) {
      finish(recvs[r], "reduce");
      combine(acc, parts[r], op);
    }
  if (op == Reduce::AVG) average(acc, n);
  t.copy_(acc);
}

void Collectives::allgather(std::vector<at::Tensor>& outs, const at::Tensor& in) {
  int64_t tag = next_tag();
  TagScope ts{t_, tag};
  exchange(tag, outs, std::vector<at::Tensor>(t_.size(), in));
}

void Collectives::gather(std::vector<at::Tensor>& outs, const at::Tensor& in, int root) {
  int64_t tag = next_tag();
  TagScope ts{t_, tag};
  int n = t_.size();
  std::vector<at::Tensor> ins(n);
  ins[root] = in;
  exchange(tag, t_.rank() == root ? outs : std::vector<at::Tensor>(n), ins);
}

void Collectives::scatter(at::Tensor& out, const std::vector<at::Tensor>& ins, int root) {
  int64_t tag = next_tag();
  TagScope ts{t_, tag};
  int n = t_.size();
  std::vector<at::Tensor> outs(n);
  outs[root] = out;
  exchange(tag, outs, t_.rank() == root ? ins : std::vector<at::Tensor>(n));
}

void Collectives::reduce_scatter(at::Tensor& out, const std::vector<at::Tensor>& ins, Reduce op) {
  int64_t tag = next_tag();
  TagScope ts{t_, tag};
  int n = t_.size(), me = t_.rank();
  std::vector<at::Tensor> parts(n), outs(n), sends(ins.begin(), ins.end());
  for (int r = 0; r < n; r++) {
    if (r == me) continue;
    parts[r] = at::empty(ins[me].sizes(), ins[me].options());
    outs[r] = parts[r];
  }
  parts[me] = ins[me];
  sends[me] = at::Tensor();
  exchange(tag, outs, sends);
  at::Tensor total = parts[0].contiguous().clone();
  for (int r = 1; r < n; r++) combine(total, parts[r].contiguous(), op);  // rank order: alike everywhere
  if (op == Reduce::AVG) average(total, n);
  out.copy_(total.view(out.sizes()));
}

void Collectives::alltoall(std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins) {
  int64_t tag = next_tag();
  TagScope ts{t_, tag};
  exchange(tag, outs, ins);
}

}  // namespace homa_torch
