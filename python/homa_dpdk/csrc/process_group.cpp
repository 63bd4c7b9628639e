// process_group.cpp: see process_group.hpp.
#include "process_group.hpp"

#include <ATen/core/ivalue.h>

#include <sstream>

namespace homa_torch {

namespace {

c10::intrusive_ptr<c10::ivalue::Future> new_future() {
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
}

void check_tensor(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.defined(), "homa_dpdk.torch: ", what, ": an undefined tensor");
  TORCH_CHECK(t.device().is_cpu(), "homa_dpdk.torch: ", what, ": the backend \"homa\" takes CPU tensors, not ",
              t.device().str());
  TORCH_CHECK(t.layout() == at::kStrided, "homa_dpdk.torch: ", what, ": sparse tensors are not supported");
}

at::Tensor single(const std::vector<at::Tensor>& ts, const char* what) {
  TORCH_CHECK(ts.size() == 1, "homa_dpdk.torch: ", what, " takes one tensor per call, not ", ts.size());
  check_tensor(ts[0], what);
  return ts[0];
}

Reduce reduce_of(const c10d::ReduceOp& op) {
  int v = int(op.op_);
  TORCH_CHECK(v >= 0 && v <= int(Reduce::BXOR), "homa_dpdk.torch: the reduction op ", v,
              " (PREMUL_SUM?) is not supported");
  return Reduce(v);
}

int64_t bytes_of(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (auto& t : ts) n += t.defined() ? int64_t(t.nbytes()) : 0;
  return n;
}

}  // namespace

// ------------------------------------------------------------------ Work

WorkHoma::WorkHoma(int rank, c10d::OpType type, c10::intrusive_ptr<c10::ivalue::Future> fut,
                   std::shared_ptr<Transport> t, std::vector<at::Tensor> outputs, RecvPtr recv)
    : c10d::Work(rank, type), fut_(std::move(fut)), t_(std::move(t)), outputs_(std::move(outputs)),
      recv_(std::move(recv)) {}

bool WorkHoma::isCompleted() { return fut_->completed(); }

bool WorkHoma::isSuccess() const { return fut_->completed() && !fut_->hasError(); }

std::exception_ptr WorkHoma::exception() const { return fut_->completed() ? fut_->exception_ptr() : nullptr; }

int WorkHoma::sourceRank() const {
  TORCH_CHECK(recv_ != nullptr, "homa_dpdk.torch: sourceRank is for a receive's Work");
  TORCH_CHECK(fut_->completed(), "homa_dpdk.torch: sourceRank before the receive completed");
  return recv_->src;
}

std::vector<at::Tensor> WorkHoma::result() { return outputs_; }

bool WorkHoma::wait(std::chrono::milliseconds /*timeout*/) {
  if (!fut_->completed()) {
    t_->drive_until([this] { return fut_->completed(); });
  }
  if (fut_->hasError()) std::rethrow_exception(fut_->exception_ptr());
  return true;
}

// ---------------------------------------------------------- construction

ProcessGroupHoma::ProcessGroupHoma(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : HomaBase(rank, size) {
  Config cfg = config_from_env(rank, size, int64_t(timeout.count()) * 1'000'000);
  // The store's errors (c10::Error) without their C++ backtrace.
  auto plain = [](auto&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const c10::Error& e) {
      throw std::runtime_error(e.what_without_backtrace());
    }
  };
  JobStore js;
  js.set = [&](const std::string& k, const std::string& v) {
    plain([&] { store->set(k, std::vector<uint8_t>(v.begin(), v.end())); });
  };
  js.has = [&](const std::string& k) { return plain([&] { return store->check({k}); }); };
  js.get = [&](const std::string& k) {
    auto v = plain([&] { return store->get(k); });
    return std::string(v.begin(), v.end());
  };
  t_ = std::make_shared<Transport>(cfg, js);
  coll_ = std::make_shared<Collectives>(*t_);
  barrier()->wait();
}

ProcessGroupHoma::~ProcessGroupHoma() { shutdown(); }

void ProcessGroupHoma::shutdown() {
  if (t_) t_->close();
}

std::vector<std::pair<std::string, uint64_t>> ProcessGroupHoma::stats() const {
  return {{"messages_sent", t_->n_sent.load()},       {"messages_received", t_->n_received.load()},
          {"unexpected_parts", t_->n_unexpected.load()}, {"ops_inline", t_->n_inline.load()},
          {"ops_queued", t_->n_queued.load()},         {"dropped", t_->n_dropped.load()},
          {"dropped_stranger", t_->n_stranger.load()}, {"dropped_stale", t_->n_stale.load()},
          {"dropped_duplicate", t_->n_duplicate.load()},
          {"yields_lost", t_->n_yield_lost.load()}};
}

// ------------------------------------------------------------ operations

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::run(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                     int64_t bytes, std::function<void()> fn, RecvPtr recv) {
  auto fut = new_future();
  auto work = c10::make_intrusive<WorkHoma>(rank_, type, fut, t_, outputs, recv);
  bool self_completing = recv != nullptr;
  std::string failed = t_->failure();
  if (!failed.empty()) {
    fut->setError(std::make_exception_ptr(std::runtime_error(failed)));
    return work;
  }
  auto body = [fut, outputs = std::move(outputs), fn = std::move(fn), self_completing]() {
    try {
      fn();
      if (!self_completing) fut->markCompleted(c10::IValue(outputs));
    } catch (...) {
      if (!fut->completed()) fut->setError(std::current_exception());
    }
  };
  if (bytes > t_->config().inline_bytes || !t_->try_inline(body)) t_->submit(std::move(body));
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  at::Tensor t = single(tensors, "broadcast");
  int root = int(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < size_, "homa_dpdk.torch: broadcast from rank ", root, " of ", size_);
  auto c = coll_;
  return run(c10d::OpType::BROADCAST, tensors, t.nbytes(), [c, t, root]() mutable { c->broadcast(t, root); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  at::Tensor t = single(tensors, "allreduce");
  Reduce op = reduce_of(opts.reduceOp);
  auto c = coll_;
  return run(c10d::OpType::ALLREDUCE, tensors, t.nbytes(), [c, t, op]() mutable { c->allreduce(t, op); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  for (auto& t : tensors) check_tensor(t, "allreduce_coalesced");
  Reduce op = reduce_of(opts.reduceOp);
  auto c = coll_;
  std::vector<at::Tensor> ts = tensors;
  return run(c10d::OpType::ALLREDUCE_COALESCED, tensors, bytes_of(tensors), [c, ts, op]() mutable {
    for (auto& t : ts) c->allreduce(t, op);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  at::Tensor t = single(tensors, "reduce");
  Reduce op = reduce_of(opts.reduceOp);
  int root = int(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < size_, "homa_dpdk.torch: reduce to rank ", root, " of ", size_);
  auto c = coll_;
  return run(c10d::OpType::REDUCE, tensors, t.nbytes(), [c, t, root, op]() mutable { c->reduce(t, root, op); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions&) {
  at::Tensor in = single(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && int(outputs[0].size()) == size_,
              "homa_dpdk.torch: allgather takes one list of ", size_, " output tensors");
  for (auto& o : outputs[0]) {
    check_tensor(o, "allgather");
    TORCH_CHECK(o.nbytes() == in.nbytes() && o.scalar_type() == in.scalar_type(),
                "homa_dpdk.torch: allgather: an output differs from the input in size or dtype");
  }
  std::vector<at::Tensor> outs = outputs[0];
  auto c = coll_;
  return run(c10d::OpType::ALLGATHER, outs, in.nbytes() * size_, [c, outs, in]() mutable { c->allgather(outs, in); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions&) {
  check_tensor(output, "_allgather_base");
  check_tensor(input, "_allgather_base");
  TORCH_CHECK(output.numel() == input.numel() * size_ && output.scalar_type() == input.scalar_type(),
              "homa_dpdk.torch: _allgather_base: the output must hold ", size_, " inputs of its dtype");
  at::Tensor out = output, in = input;
  auto c = coll_;
  int n = size_;
  return run(c10d::OpType::_ALLGATHER_BASE, {output}, output.nbytes(), [c, out, in, n]() mutable {
    at::Tensor flat = out.is_contiguous() ? out.view(-1) : at::empty({out.numel()}, out.options());
    std::vector<at::Tensor> outs;
    int64_t k = in.numel();
    for (int r = 0; r < n; r++) outs.push_back(flat.narrow(0, r * k, k));
    c->allgather(outs, in.reshape(-1));
    if (!out.is_contiguous()) out.copy_(flat.view(out.sizes()));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::GatherOptions& opts) {
  at::Tensor in = single(inputs, "gather");
  int root = int(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < size_, "homa_dpdk.torch: gather to rank ", root, " of ", size_);
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && int(outputs[0].size()) == size_,
                "homa_dpdk.torch: gather's root takes one list of ", size_, " output tensors");
    outs = outputs[0];
    for (auto& o : outs) check_tensor(o, "gather");
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "homa_dpdk.torch: gather: only the root takes outputs");
  }
  auto c = coll_;
  return run(c10d::OpType::GATHER, outs, in.nbytes() * (rank_ == root ? size_ : 1),
             [c, outs, in, root]() mutable { c->gather(outs, in, root); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  at::Tensor out = single(outputs, "scatter");
  int root = int(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < size_, "homa_dpdk.torch: scatter from rank ", root, " of ", size_);
  std::vector<at::Tensor> ins;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && int(inputs[0].size()) == size_,
                "homa_dpdk.torch: scatter's root takes one list of ", size_, " input tensors");
    ins = inputs[0];
    for (auto& i : ins) check_tensor(i, "scatter");
  }
  auto c = coll_;
  return run(c10d::OpType::SCATTER, outputs, out.nbytes() * (rank_ == root ? size_ : 1),
             [c, out, ins, root]() mutable { c->scatter(out, ins, root); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  at::Tensor out = single(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && int(inputs[0].size()) == size_,
              "homa_dpdk.torch: reduce_scatter takes one list of ", size_, " input tensors");
  for (auto& i : inputs[0]) {
    check_tensor(i, "reduce_scatter");
    TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
                "homa_dpdk.torch: reduce_scatter: an input differs from the output in size or dtype");
  }
  Reduce op = reduce_of(opts.reduceOp);
  std::vector<at::Tensor> ins = inputs[0];
  auto c = coll_;
  return run(c10d::OpType::REDUCE_SCATTER, outputs, bytes_of(ins),
             [c, out, ins, op]() mutable { c->reduce_scatter(out, ins, op); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  check_tensor(output, "_reduce_scatter_base");
  check_tensor(input, "_reduce_scatter_base");
  TORCH_CHECK(input.numel() == output.numel() * size_ && output.scalar_type() == input.scalar_type(),
              "homa_dpdk.torch: _reduce_scatter_base: the input must hold ", size_, " outputs of its dtype");
  Reduce op = reduce_of(opts.reduceOp);
  at::Tensor out = output, in = input;
  auto c = coll_;
  int n = size_;
  return run(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, input.nbytes(), [c, out, in, op, n]() mutable {
    at::Tensor flat = in.reshape(-1);
    std::vector<at::Tensor> ins;
    int64_t k = out.numel();
    for (int r = 0; r < n; r++) ins.push_back(flat.narrow(0, r * k, k));
    c->reduce_scatter(out, ins, op);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& outputSplitSizes,
                                                               std::vector<int64_t>& inputSplitSizes,
                                                               const c10d::AllToAllOptions&) {
  check_tensor(output, "alltoall_base");
  check_tensor(input, "alltoall_base");
  int n = size_;
  auto split = [n](const at::Tensor& t, const std::vector<int64_t>& sizes) {
    if (sizes.empty()) {
      TORCH_CHECK(t.dim() > 0 && t.size(0) % n == 0, "homa_dpdk.torch: alltoall_base: dim 0 (",
                  t.dim() ? t.size(0) : 0, ") does not split into ", n, " equal parts");
      return t.split(t.size(0) / n);
    }
    TORCH_CHECK(int(sizes.size()) == n, "homa_dpdk.torch: alltoall_base: ", sizes.size(), " split sizes for ", n,
                " ranks");
    return t.split_with_sizes(sizes);
  };
  std::vector<at::Tensor> outs = split(output, outputSplitSizes), ins = split(input, inputSplitSizes);
  auto c = coll_;
  return run(c10d::OpType::ALLTOALL_BASE, {output}, input.nbytes(),
             [c, outs, ins]() mutable { c->alltoall(outs, ins); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions&) {
  TORCH_CHECK(int(outputs.size()) == size_ && int(inputs.size()) == size_,
              "homa_dpdk.torch: alltoall takes ", size_, " outputs and ", size_, " inputs");
  for (auto& t : outputs) check_tensor(t, "alltoall");
  for (auto& t : inputs) check_tensor(t, "alltoall");
  std::vector<at::Tensor> outs = outputs, ins = inputs;
  auto c = coll_;
  return run(c10d::OpType::ALLTOALL, outputs, bytes_of(inputs), [c, outs, ins]() mutable { c->alltoall(outs, ins); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  at::Tensor t = single(tensors, "send");
  TORCH_CHECK(dstRank >= 0 && dstRank < size_ && dstRank != rank_, "homa_dpdk.torch: send to rank ", dstRank);
  TORCH_CHECK(tag >= 0, "homa_dpdk.torch: tags are >= 0 (the collectives use the negative ones)");
  auto c = coll_;
  return run(c10d::OpType::SEND, tensors, t.nbytes(), [c, t, dstRank, tag]() { c->send(t, dstRank, tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::post_recv(std::vector<at::Tensor>& tensors, int src, int tag,
                                                           c10d::OpType type) {
  at::Tensor t = single(tensors, "recv");
  TORCH_CHECK(tag >= 0, "homa_dpdk.torch: tags are >= 0 (the collectives use the negative ones)");
  auto fut = new_future();
  std::vector<at::Tensor> outs = tensors;
  RecvPtr r = Collectives::make_recv(t, src, tag, [fut, outs](const std::string& err) {
    if (err.empty())
      fut->markCompleted(c10::IValue(outs));
    else
      fut->setError(std::make_exception_ptr(std::runtime_error(err)));
  });
  auto work = c10::make_intrusive<WorkHoma>(rank_, type, fut, t_, outs, r);
  std::string failed = t_->failure();
  if (!failed.empty()) {
    fut->setError(std::make_exception_ptr(std::runtime_error(failed)));
    return work;
  }
  std::shared_ptr<Transport> tp = t_;
  auto body = [tp, r]() { tp->post(r); };
  if (!t_->try_inline(body)) t_->submit(body);  // posting never blocks: inline whatever the size
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  TORCH_CHECK(srcRank >= 0 && srcRank < size_ && srcRank != rank_, "homa_dpdk.torch: recv from rank ", srcRank);
  return post_recv(tensors, srcRank, tag, c10d::OpType::RECV);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  return post_recv(tensors, kAnySource, tag, c10d::OpType::RECVANYSOURCE);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupHoma::barrier(const c10d::BarrierOptions&) {
  auto c = coll_;
  return run(c10d::OpType::BARRIER, {}, 0, [c]() { c->barrier(); });
}

c10::intrusive_ptr<ProcessGroupHoma> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                            std::chrono::milliseconds timeout) {
  return c10::make_intrusive<ProcessGroupHoma>(store, rank, size, timeout);
}

}  // namespace homa_torch
