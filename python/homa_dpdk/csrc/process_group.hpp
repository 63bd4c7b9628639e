// process_group.hpp: the c10d surface of the "homa" backend: a thin class
// that turns torch.distributed's calls into operations on the transport
// (transport.hpp) and the algorithms (collectives.hpp), and their outcome
// into a c10d::Work whose future holds the output tensors.
//
// An operation either runs at once in the caller's thread (small ones, when
// nothing is queued and no one drives: a synchronous small all_reduce then
// costs no thread hand-off), or is queued for the group's progress thread,
// which runs them one at a time in order and completes their futures; the
// caller returns at once (DDP's reducer overlaps its all_reduce with
// backward this way). Work::wait drives progress itself when it can.
//
// torch 1.13 has one class for a backend, c10d::ProcessGroup; torch 2.x
// split it: c10d::Backend is what a backend derives from (the same virtual
// methods, the same (rank, size) constructor), and c10d::ProcessGroup became
// a dispatcher that holds one backend per device type. Under
// TORCH_VERSION_MAJOR > 1 only the base class below changes (HomaBase), the
// creator returns a c10::intrusive_ptr<c10d::Backend> and the pybind parent
// class is c10d::Backend; Backend.register_backend then takes
// devices=["cpu"] (torch.py passes it). That is read in torch 2.x's headers
// and in out-of-tree backends, not built here: torch 2.x is not installable
// on this machine.
#pragma once

#include <torch/version.h>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#if TORCH_VERSION_MAJOR > 1
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

#include <chrono>
#include <memory>

#include "collectives.hpp"
#include "transport.hpp"

namespace homa_torch {

#if TORCH_VERSION_MAJOR > 1
using HomaBase = c10d::Backend;
#else
using HomaBase = c10d::ProcessGroup;
#endif

// WorkHoma is an operation's handle: its future is completed with the
// list of output tensors (or the error) by whoever ran the operation.
class WorkHoma : public c10d::Work {
 public:
  WorkHoma(int rank, c10d::OpType type, c10::intrusive_ptr<c10::ivalue::Future> fut, std::shared_ptr<Transport> t,
           std::vector<at::Tensor> outputs, RecvPtr recv = nullptr);
  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  // wait drives progress in the calling thread when no one else does, and
  // raises the operation's error. The group's timeout applies, not timeout.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void abort() override {}
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return fut_; }

 private:
  c10::intrusive_ptr<c10::ivalue::Future> fut_;
  std::shared_ptr<Transport> t_;
  std::vector<at::Tensor> outputs_;
  RecvPtr recv_;  // a receive's, for sourceRank
};

class ProcessGroupHoma : public HomaBase {
 public:
  // Attaches, rendezvouses through store, and runs a first barrier.
  ProcessGroupHoma(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout);
  ~ProcessGroupHoma() override;

  const std::string getBackendName() const override { return "homa"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  // Counters for tests and benchmarks: name -> value.
  std::vector<std::pair<std::string, uint64_t>> stats() const;
  // Stops the progress thread and ends the session (idempotent).
  void shutdown();

 private:
  // run makes the operation's Work: fn runs inline when it moves at most
  // inline_bytes and nothing else is in the way, else on the progress
  // thread; its future is completed with outputs after fn returns, or
  // with fn's exception (self_completing: fn completes it itself).
  c10::intrusive_ptr<c10d::Work> run(c10d::OpType type, std::vector<at::Tensor> outputs, int64_t bytes,
                                     std::function<void()> fn, RecvPtr recv = nullptr);
  c10::intrusive_ptr<c10d::Work> post_recv(std::vector<at::Tensor>& tensors, int src, int tag, c10d::OpType type);

  std::shared_ptr<Transport> t_;
  std::shared_ptr<Collectives> coll_;
};

// create is the backend's creator (Backend.register_backend).
c10::intrusive_ptr<ProcessGroupHoma> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                            std::chrono::milliseconds timeout);

}  // namespace homa_torch
