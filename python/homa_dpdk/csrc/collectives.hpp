// collectives.hpp: the algorithms of the "homa" backend, over Transport's
// messages, on CPU tensors. Every function here runs on the driver (the
// group's progress thread, or a caller running an operation inline) and
// blocks it until the operation is done on this rank; operations run one
// at a time, in the order the application issued them, and each
// collective takes the next (negative) tag, so every rank numbers them
// alike. Nothing here knows torch's ProcessGroup: the reduction is this
// file's own enum, and the tensors are ATen's.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <vector>

#include "transport.hpp"

namespace homa_torch {

// Reduce has c10d::ReduceOp's numbers (SUM 0 ... BXOR 7).
enum class Reduce : int { SUM = 0, AVG = 1, PRODUCT = 2, MIN = 3, MAX = 4, BAND = 5, BOR = 6, BXOR = 7 };

class Collectives {
 public:
  explicit Collectives(Transport& t) : t_(t) {}

  void barrier();
  void broadcast(at::Tensor& t, int root);
  void allreduce(at::Tensor& t, Reduce op);
  void reduce(at::Tensor& t, int root, Reduce op);
  // outs: one tensor per rank (outs[r] gets rank r's input).
  void allgather(std::vector<at::Tensor>& outs, const at::Tensor& in);
  // outs: the root's, one per rank; empty elsewhere.
  void gather(std::vector<at::Tensor>& outs, const at::Tensor& in, int root);
  // ins: the root's, one per rank; empty elsewhere.
  void scatter(at::Tensor& out, const std::vector<at::Tensor>& ins, int root);
  // out gets the reduction of every rank's ins[rank].
  void reduce_scatter(at::Tensor& out, const std::vector<at::Tensor>& ins, Reduce op);
  // outs[r] gets rank r's ins[this rank].
  void alltoall(std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins);

  // Point to point: send returns once t's bytes are in the transmit arena.
  void send(const at::Tensor& t, int dst, int64_t tag);
  // make_recv prepares a receive into t (through a staging copy when t is
  // not contiguous) that calls done(error) on the driver when it ends;
  // post it with Transport::post.
  static RecvPtr make_recv(const at::Tensor& t, int src, int64_t tag, std::function<void(const std::string&)> done);

  // The all_reduce algorithms, chosen by allreduce (public for tests).
  void ring_allreduce(at::Tensor& flat, Reduce op, int64_t tag);
  void doubling_allreduce(at::Tensor& flat, Reduce op, int64_t tag);

 private:
  struct Incoming {
    RecvPtr r;
    at::Tensor target;
    at::Tensor stage;  // defined when target is not contiguous
  };
  int64_t next_tag() { return -(++coll_); }
  Incoming post_into(int src, int64_t tag, const at::Tensor& target);
  void finish(Incoming& in, const char* what);
  void exchange(int64_t tag, std::vector<at::Tensor> outs, const std::vector<at::Tensor>& ins);

  Transport& t_;
  int64_t coll_ = 0;  // collectives run so far: the next one's tag is -(coll_ + 1)
};

// combine reduces x into acc (same shape and dtype) with op; AVG adds.
void combine(at::Tensor& acc, const at::Tensor& x, Reduce op);
// average divides acc by n (floor division for integers).
void average(at::Tensor& acc, int n);

}  // namespace homa_torch
