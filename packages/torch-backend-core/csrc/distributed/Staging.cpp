#include "Staging.h"

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <torch_backend/HostAccess.h>
#include <torch_backend/Runtime.h>

#include <algorithm>
#include <utility>

#include "StagedWork.h"

namespace torch_backend::distributed {

Staging::Staging(StagingMode mode) : mode_(mode) {}

at::Tensor Staging::stage(const at::Tensor& t, bool read, bool write) {
  Completion& c = *completion_;
  if (write) {
    c.results.push_back(t);
  }
  if (!t.defined() || t.device().type() != c10::DeviceType::PrivateUse1) {
    // Host tensors (this backend also serves "cpu") go to Gloo as they are.
    if (write && t.defined()) {
      c.written_host_.push_back(t);
    }
    return t;
  }
  // The collective must see every write enqueued before it, and must not
  // overwrite memory that earlier work still reads.
  if (std::find(synced_.begin(), synced_.end(), t.device()) == synced_.end()) {
    wait_for_host_access(t.device());
    synced_.push_back(t.device());
  }
  c.keep_alive_.push_back(t);
  at::Tensor host;
  if (mode_ == StagingMode::kAuto && t.is_contiguous() &&
      active_capabilities().host_addressable_memory) {
    host = host_alias(t);
  } else {
    host =
        at::empty(t.sizes(), t.options().device(c10::kCPU).pinned_memory(true));
    if (read) {
      at::NoGradGuard no_grad;
      host.copy_(t);
    }
    if (write) {
      c.copy_back_.emplace_back(host, t);
    }
  }
  if (write) {
    c.written_host_.push_back(host);
  }
  return host;
}

at::Tensor Staging::input(const at::Tensor& t) { return stage(t, true, false); }
at::Tensor Staging::output(const at::Tensor& t) {
  return stage(t, false, true);
}
at::Tensor Staging::in_out(const at::Tensor& t) { return stage(t, true, true); }

namespace {
// `stage` applied to each item (a tensor, or a list of them).
template <typename Item, typename Stage>
auto each(const std::vector<Item>& items, Stage stage) {
  std::vector<decltype(stage(std::declval<const Item&>()))> staged;
  staged.reserve(items.size());
  for (const auto& item : items) {
    staged.push_back(stage(item));
  }
  return staged;
}
}  // namespace

std::vector<at::Tensor> Staging::inputs(const std::vector<at::Tensor>& ts) {
  return each(ts, [this](const at::Tensor& t) { return input(t); });
}
std::vector<at::Tensor> Staging::outputs(const std::vector<at::Tensor>& ts) {
  return each(ts, [this](const at::Tensor& t) { return output(t); });
}
std::vector<at::Tensor> Staging::in_outs(const std::vector<at::Tensor>& ts) {
  return each(ts, [this](const at::Tensor& t) { return in_out(t); });
}
std::vector<std::vector<at::Tensor>> Staging::inputs(
    const std::vector<std::vector<at::Tensor>>& lists) {
  return each(lists, [this](const auto& list) { return inputs(list); });
}
std::vector<std::vector<at::Tensor>> Staging::outputs(
    const std::vector<std::vector<at::Tensor>>& lists) {
  return each(lists, [this](const auto& list) { return outputs(list); });
}

c10d::ReduceOp Staging::gloo_op(const c10d::ReduceOp& op, int world_size,
                                bool divide) {
  TORCH_CHECK_NOT_IMPLEMENTED(op.op_ != c10d::ReduceOp::PREMUL_SUM,
                              "ReduceOp.PREMUL_SUM is not supported on ",
                              "device tensors staged through Gloo");
  if (op.op_ != c10d::ReduceOp::AVG) {
    return op;
  }
  for (const auto& host : completion_->written_host_) {
    TORCH_CHECK_VALUE(
        at::isFloatingType(host.scalar_type()) ||
            at::isComplexType(host.scalar_type()),
        "ReduceOp.AVG needs floating-point or complex tensors, got ",
        host.scalar_type());
  }
  if (divide) {
    completion_->divisor_ = world_size;
  }
  return c10d::ReduceOp(c10d::ReduceOp::SUM);
}

c10::intrusive_ptr<c10d::Work> Staging::finish(
    c10::intrusive_ptr<c10d::Work> inner) {
  return c10::make_intrusive<StagedWork>(std::move(inner), completion_);
}

}  // namespace torch_backend::distributed
