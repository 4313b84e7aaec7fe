// The native backend's c10d operations (NativeBackend.h): each turns its
// tensors into the device library's buffers and issues the library's call
// through NativeBackend::launch, which orders it after the caller's stream on
// the group's communication stream and returns its work.
#include "NativeBackend.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <utility>

#include "CollectiveTypes.h"
#include "StagedWork.h"

namespace torch_backend::distributed {

namespace {

// Issues the library's operation for `op` on `dtype` through `issue`; where
// the library lacks an average, a sum, and then, where this rank holds a
// result, a division by the group's size.
void issue_reduction(const NativeBackend::Call& call, const c10d::ReduceOp& op,
                     at::ScalarType dtype,
                     const std::function<Status(ReduceOp)>& issue,
                     const at::Tensor& output, bool holds_result,
                     const char* what) {
  const ReduceOp wanted = library_op(op, dtype);
  Status status = issue(wanted);
  if (status == kNotSupported && wanted == ReduceOp::Avg) {
    status = issue(ReduceOp::Sum);
    if (status == kSuccess && holds_result) {
      // Floating or complex (reducible() checked).
      call.after([output, size = call.comm.size()] { output.div_(size); });
    }
  }
  // Declined before anything was enqueued, on every rank alike (same dtype
  // and operation): a TypeError here, not a failed collective.
  TORCH_CHECK_TYPE(status != kNotSupported, call.comm.library().library_name(),
                   " has no ", what, " of ", dtype, " tensors with ReduceOp.",
                   op_name(op.op_), " (the collective library declines it)");
  call.comm.check(status, what);
}

// all_reduce, or reduce to `root` (>= 0).
void reduce_on_stream(const NativeBackend::Call& call, const at::Tensor& input,
                      const at::Tensor& output, const c10d::ReduceOp& op,
                      int root) {
  Communicator& comm = call.comm;
  DeviceCollectives& library = comm.library();
  const at::Tensor scaled = premultiplied(input, op);
  if (!scaled.is_same(input)) {
    call.keep_alive.push_back(scaled);
  }
  const Buffer in = reducible(scaled, op, library.library_name());
  const Buffer out = reducible(output, op, library.library_name());
  auto issue = [&](ReduceOp library_reduce) {
    return root < 0
               ? library.all_reduce(in.data, out.data, in.count, in.dtype,
                                    library_reduce, comm.handle(), call.stream)
               : library.reduce(in.data, out.data, in.count, in.dtype,
                                library_reduce, root, comm.handle(),
                                call.stream);
  };
  issue_reduction(call, op, input.scalar_type(), issue, output,
                  root < 0 || root == comm.rank(),
                  root < 0 ? "all_reduce" : "reduce");
}

}  // namespace

c10::intrusive_ptr<c10d::Work> NativeBackend::broadcast(
    Tensors& tensors, const c10d::BroadcastOptions& opts) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "broadcast: one tensor per call");
  if (tensors[0].is_cpu()) {
    return on_cpu(cpu("broadcast").broadcast(tensors, opts));
  }
  const int root = static_cast<int>(opts.rootRank);
  return launch(c10d::OpType::BROADCAST, "broadcast", tensors, tensors,
                [&](const Call& call) {
                  const Buffer buffer = bytes_of(call.out[0]);
                  call.comm.check(call.comm.library().broadcast(
                                      buffer.data, buffer.count, buffer.dtype,
                                      root, call.comm.handle(), call.stream),
                                  "broadcast");
                });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::allreduce(
    Tensors& tensors, const c10d::AllreduceOptions& opts) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "allreduce: one tensor per call");
  if (tensors[0].is_cpu()) {
    return on_cpu(cpu("allreduce").allreduce(tensors, opts));
  }
  return launch(c10d::OpType::ALLREDUCE, "all_reduce", tensors, tensors,
                [&](const Call& call) {
                  reduce_on_stream(call, call.in[0], call.out[0], opts.reduceOp,
                                   -1);
                });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::allreduce_coalesced(
    Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK_VALUE(!tensors.empty(), "allreduce_coalesced: no tensors");
  if (tensors[0].is_cpu()) {
    return on_cpu(
        cpu("allreduce_coalesced").allreduce_coalesced(tensors, opts));
  }
  return launch(c10d::OpType::ALLREDUCE_COALESCED, "all_reduce_coalesced",
                tensors, tensors, [&](const Call& call) {
                  for (std::size_t i = 0; i < call.in.size(); ++i) {
                    reduce_on_stream(call, call.in[i], call.out[i],
                                     opts.reduceOp, -1);
                  }
                });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::reduce(
    Tensors& tensors, const c10d::ReduceOptions& opts) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "reduce: one tensor per call");
  if (tensors[0].is_cpu()) {
    return on_cpu(cpu("reduce").reduce(tensors, opts));
  }
  const int root = static_cast<int>(opts.rootRank);
  return launch(
      c10d::OpType::REDUCE, "reduce", tensors, tensors, [&](const Call& call) {
        reduce_on_stream(call, call.in[0], call.out[0], opts.reduceOp, root);
      });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  if (input.is_cpu()) {
    return on_cpu(
        cpu("all_gather_into_tensor")._allgather_base(output, input, opts));
  }
  TORCH_CHECK_VALUE(output.numel() == input.numel() * getSize(),
                    "all_gather_into_tensor: the output must have world_size "
                    "times the input's elements");
  TORCH_CHECK_TYPE(output.scalar_type() == input.scalar_type(),
                   "all_gather_into_tensor: input and output dtypes differ");
  return launch(c10d::OpType::_ALLGATHER_BASE, "all_gather_into_tensor",
                {input}, {output}, [&](const Call& call) {
                  const Buffer in = bytes_of(call.in[0]);
                  call.comm.check(
                      call.comm.library().all_gather(
                          in.data, call.out[0].data_ptr(), in.count, in.dtype,
                          call.comm.handle(), call.stream),
                      "all_gather");
                });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::allgather(
    TensorLists& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) {
  TORCH_CHECK_VALUE(inputs.size() == 1 && outputs.size() == 1,
                    "all_gather: one tensor list per call");
  if (inputs[0].is_cpu()) {
    return on_cpu(cpu("all_gather").allgather(outputs, inputs, opts));
  }
  TORCH_CHECK_VALUE(static_cast<int>(outputs[0].size()) == getSize(),
                    "all_gather: the output list must have world_size tensors");
  return launch(c10d::OpType::ALLGATHER, "all_gather", inputs, outputs[0],
                [&](const Call& call) {
                  const at::Tensor& input = call.in[0];
                  at::Tensor flat =
                      at::empty({getSize(), input.numel()}, input.options());
                  call.keep_alive.push_back(flat);
                  const Buffer in = bytes_of(input);
                  call.comm.check(
                      call.comm.library().all_gather(
                          in.data, flat.data_ptr(), in.count, in.dtype,
                          call.comm.handle(), call.stream),
                      "all_gather");
                  call.after([flat, out = call.out] {
                    for (std::size_t r = 0; r < out.size(); ++r) {
                      out[r].copy_(flat[r].view(out[r].sizes()));
                    }
                  });
                });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::allgather_into_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size() && !inputs.empty(),
                    "all_gather_into_tensor_coalesced: as many outputs as "
                    "inputs");
  if (inputs[0].is_cpu()) {
    return on_cpu(cpu("all_gather_into_tensor_coalesced")
                      .allgather_into_tensor_coalesced(outputs, inputs, opts));
  }
  return launch(c10d::OpType::COALESCED, "all_gather_into_tensor_coalesced",
                inputs, outputs, [&](const Call& call) {
                  for (std::size_t i = 0; i < call.in.size(); ++i) {
                    const Buffer in = bytes_of(call.in[i]);
                    call.comm.check(
                        call.comm.library().all_gather(
                            in.data, call.out[i].data_ptr(), in.count, in.dtype,
                            call.comm.handle(), call.stream),
                        "all_gather");
                  }
                });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input,
    const c10d::ReduceScatterOptions& opts) {
  if (input.is_cpu()) {
    return on_cpu(
        cpu("reduce_scatter_tensor")._reduce_scatter_base(output, input, opts));
  }
  TORCH_CHECK_VALUE(input.numel() == output.numel() * getSize(),
                    "reduce_scatter_tensor: the input must have world_size "
                    "times the output's elements");
  TORCH_CHECK_TYPE(output.scalar_type() == input.scalar_type(),
                   "reduce_scatter_tensor: input and output dtypes differ");
  return launch(
      c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {input},
      {output}, [&](const Call& call) {
        DeviceCollectives& library = call.comm.library();
        const at::Tensor scaled = premultiplied(call.in[0], opts.reduceOp);
        call.keep_alive.push_back(scaled);
        const Buffer in =
            reducible(scaled, opts.reduceOp, library.library_name());
        const Buffer out =
            reducible(call.out[0], opts.reduceOp, library.library_name());
        issue_reduction(
            call, opts.reduceOp, input.scalar_type(),
            [&](ReduceOp op) {
              return library.reduce_scatter(in.data, out.data, out.count,
                                            in.dtype, op, call.comm.handle(),
                                            call.stream);
            },
            call.out[0], true, "reduce_scatter");
      });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::reduce_scatter(
    Tensors& outputs, TensorLists& inputs,
    const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == 1 && inputs.size() == 1,
                    "reduce_scatter: one tensor list per call");
  if (outputs[0].is_cpu()) {
    return on_cpu(cpu("reduce_scatter").reduce_scatter(outputs, inputs, opts));
  }
  TORCH_CHECK_VALUE(static_cast<int>(inputs[0].size()) == getSize(),
                    "reduce_scatter: the input list must have world_size "
                    "tensors");
  // Joined on the caller's stream: the collective is ordered after it.
  Tensors flat;
  for (const at::Tensor& part : inputs[0]) {
    flat.push_back(part.reshape({-1}));
  }
  at::Tensor joined = at::cat(flat);
  return _reduce_scatter_base(outputs[0], joined, opts);
}

c10::intrusive_ptr<c10d::Work> NativeBackend::reduce_scatter_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size() && !inputs.empty(),
                    "reduce_scatter_tensor_coalesced: as many outputs as "
                    "inputs");
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    works.push_back(_reduce_scatter_base(outputs[i], inputs[i], opts));
  }
  return c10::make_intrusive<CoalescedWork>(std::move(works));
}

c10::intrusive_ptr<c10d::Work> NativeBackend::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
    std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& opts) {
  if (input.is_cpu()) {
    return on_cpu(
        cpu("all_to_all_single")
            .alltoall_base(output, input, output_splits, input_splits, opts));
  }
  const int size = getSize();
  auto rows = [size](const at::Tensor& tensor, std::vector<int64_t> splits,
                     const char* what) {
    if (splits.empty()) {
      TORCH_CHECK_VALUE(tensor.size(0) % size == 0, "all_to_all_single: the ",
                        what, "'s first dimension (", tensor.size(0),
                        ") does not divide among ", size, " ranks");
      splits.assign(size, tensor.size(0) / size);
    }
    TORCH_CHECK_VALUE(static_cast<int>(splits.size()) == size,
                      "all_to_all_single: ", what, " split sizes must have ",
                      size, " entries");
    return splits;
  };
  const std::vector<int64_t> out_rows = rows(output, output_splits, "output");
  const std::vector<int64_t> in_rows = rows(input, input_splits, "input");
  const bool equal = output_splits.empty() && input_splits.empty();
  return launch(c10d::OpType::ALLTOALL_BASE, "all_to_all_single", {input},
                {output}, [&, equal](const Call& call) {
                  if (equal) {
                    const Buffer in = bytes_of(call.in[0]);
                    const Status status = call.comm.library().all_to_all(
                        in.data, call.out[0].data_ptr(), in.count / size,
                        in.dtype, call.comm.handle(), call.stream);
                    if (status != kNotSupported) {
                      call.comm.check(status, "all_to_all");
                      return;
                    }
                  }
                  Tensors sends, recvs;
                  int64_t in_at = 0, out_at = 0;
                  for (int r = 0; r < size; ++r) {
                    sends.push_back(call.in[0].narrow(0, in_at, in_rows[r]));
                    recvs.push_back(call.out[0].narrow(0, out_at, out_rows[r]));
                    in_at += in_rows[r];
                    out_at += out_rows[r];
                  }
                  exchange(call, sends, recvs);
                });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::alltoall(
    Tensors& outputs, Tensors& inputs, const c10d::AllToAllOptions& opts) {
  TORCH_CHECK_VALUE(static_cast<int>(inputs.size()) == getSize() &&
                        outputs.size() == inputs.size(),
                    "all_to_all: world_size input and output tensors");
  if (inputs[0].is_cpu()) {
    return on_cpu(cpu("all_to_all").alltoall(outputs, inputs, opts));
  }
  return launch(c10d::OpType::ALLTOALL, "all_to_all", inputs, outputs,
                [&](const Call& call) { exchange(call, call.in, call.out); });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::gather(
    TensorLists& outputs, Tensors& inputs, const c10d::GatherOptions& opts) {
  TORCH_CHECK_VALUE(inputs.size() == 1, "gather: one input tensor per call");
  if (inputs[0].is_cpu()) {
    return on_cpu(cpu("gather").gather(outputs, inputs, opts));
  }
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = getRank() == root;
  Tensors received = is_root ? outputs.at(0) : Tensors{};
  TORCH_CHECK_VALUE(!is_root || static_cast<int>(received.size()) == getSize(),
                    "gather: the root's output list must have world_size "
                    "tensors");
  return launch(c10d::OpType::GATHER, "gather", inputs, received,
                [&, root, is_root](const Call& call) {
                  Tensors sends(getSize()), recvs(getSize());
                  if (is_root) {
                    recvs = call.out;
                  }
                  sends[root] = call.in[0];
                  exchange(call, sends, recvs);
                });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::scatter(
    Tensors& outputs, TensorLists& inputs, const c10d::ScatterOptions& opts) {
  TORCH_CHECK_VALUE(outputs.size() == 1, "scatter: one output tensor per call");
  if (outputs[0].is_cpu()) {
    return on_cpu(cpu("scatter").scatter(outputs, inputs, opts));
  }
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = getRank() == root;
  Tensors sent = is_root ? inputs.at(0) : Tensors{};
  TORCH_CHECK_VALUE(!is_root || static_cast<int>(sent.size()) == getSize(),
                    "scatter: the root's input list must have world_size "
                    "tensors");
  return launch(c10d::OpType::SCATTER, "scatter", sent, outputs,
                [&, root, is_root](const Call& call) {
                  Tensors sends(getSize()), recvs(getSize());
                  if (is_root) {
                    sends = call.in;
                  }
                  recvs[root] = call.out[0];
                  exchange(call, sends, recvs);
                });
}

c10::intrusive_ptr<c10d::Work> NativeBackend::send(Tensors& tensors,
                                                   int dst_rank, int tag) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "send: one tensor per call");
  if (tensors[0].is_cpu()) {
    return on_cpu(cpu("send").send(tensors, dst_rank, tag));
  }
  return launch(
      c10d::OpType::SEND, "send", tensors, {},
      [&](const Call& call) {
        const Buffer buffer = bytes_of(call.in[0]);
        call.comm.check(
            call.comm.library().send(buffer.data, buffer.count, buffer.dtype,
                                     dst_rank, call.comm.handle(), call.stream),
            "send");
      },
      /*blocking=*/false, /*peer=*/dst_rank);
}

c10::intrusive_ptr<c10d::Work> NativeBackend::recv(Tensors& tensors,
                                                   int src_rank, int tag) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "recv: one tensor per call");
  if (tensors[0].is_cpu()) {
    return on_cpu(cpu("recv").recv(tensors, src_rank, tag));
  }
  return launch(
      c10d::OpType::RECV, "recv", {}, tensors,
      [&](const Call& call) {
        const Buffer buffer = bytes_of(call.out[0]);
        call.comm.check(
            call.comm.library().recv(buffer.data, buffer.count, buffer.dtype,
                                     src_rank, call.comm.handle(), call.stream),
            "recv");
      },
      /*blocking=*/false, /*peer=*/src_rank);
}

// As ProcessGroupNCCL: a one-element all_reduce on the device last used (or
// the rank's own), and wait() blocks the host until every rank reached it.
c10::intrusive_ptr<c10d::Work> NativeBackend::barrier(
    const c10d::BarrierOptions& opts) {
  c10::DeviceIndex index = last_device_;
  if (!opts.device_ids.empty()) {
    index = static_cast<c10::DeviceIndex>(opts.device_ids.front());
  } else if (opts.device.has_value() && !opts.device->is_cpu()) {
    index = opts.device->index();
  }
  const c10::DeviceType type = c10::DeviceType::PrivateUse1;
  if (index < 0) {
    const c10::impl::VirtualGuardImpl guard_impl(type);
    index = static_cast<c10::DeviceIndex>(getRank() % guard_impl.deviceCount());
  }
  Tensors token = {at::zeros(
      {1},
      at::TensorOptions().device(c10::Device(type, index)).dtype(at::kFloat))};
  const c10d::ReduceOp sum(c10d::ReduceOp::SUM);
  return launch(
      c10d::OpType::BARRIER, "barrier", token, token,
      [&](const Call& call) {
        reduce_on_stream(call, call.in[0], call.out[0], sum, -1);
      },
      /*blocking=*/true);
}

}  // namespace torch_backend::distributed
