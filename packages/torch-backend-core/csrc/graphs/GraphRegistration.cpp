#include "GraphRegistration.h"

#include "../aten/TorchCompat.h"

#if TORCH_BACKEND_HAS_GRAPH_IMPL
#include <memory>
#include <string>

#include <ATen/core/GraphImplInterface.h>
#include <c10/core/DeviceType.h>

#include "DeviceGraph.h"

namespace torch_backend {
namespace {

CaptureMode mode_of(at::GraphCaptureMode mode) {
  switch (mode) {
    case at::GraphCaptureMode::ThreadLocal:
      return CaptureMode::ThreadLocal;
    case at::GraphCaptureMode::Relaxed:
      return CaptureMode::Relaxed;
    case at::GraphCaptureMode::Default:
    case at::GraphCaptureMode::Global:
    default:
      return CaptureMode::Global;  // CUDA's default too
  }
}

class PrivateUse1Graph final : public at::GraphImplInterface {
 public:
  explicit PrivateUse1Graph(const at::GraphImplArgs& args)
      : graph_(args.keep_graph) {}

  void capture_begin(c10::MempoolId_t pool,
                     at::GraphCaptureMode mode) override {
    graph_.capture_begin(pool, mode_of(mode));
  }
  void capture_end() override { graph_.capture_end(); }
  void instantiate() override { graph_.instantiate(); }
  void replay() override { graph_.replay(); }
  void reset() override { graph_.reset(); }
  c10::MempoolId_t pool() const override { return graph_.pool(); }
  void enable_debug_mode() override { graph_.enable_debug_mode(); }
  void debug_dump(const std::string& path) override { graph_.debug_dump(path); }

 private:
  DeviceGraph graph_;
};

}  // namespace

void register_graph_impl() {
  const std::string key =
      c10::DeviceTypeName(c10::DeviceType::PrivateUse1, /*lower_case=*/false);
  if (!at::GraphImplRegistry()->Has(key)) {
    at::GraphImplRegistry()->Register(
        key,
        [](at::GraphImplArgs args) -> std::unique_ptr<at::GraphImplInterface> {
          return std::make_unique<PrivateUse1Graph>(args);
        });
  }
}

}  // namespace torch_backend

#else

namespace torch_backend {
void register_graph_impl() {}
}  // namespace torch_backend

#endif
