// torch_backend._C: the thin Python glue over core. Plain values cross this
// boundary (ints, strings), so only pybind11 itself is needed here.
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <cstring>

#include <torch_backend/Activate.h>
#include <torch_backend/Allocator.h>
#include <torch_backend/Generator.h>
#include <torch_backend/Runtime.h>

#include "../aten/bringup/OpReport.h"
#include "../aten/kernels/OpTable.h"
#include "../graphs/GraphRegistration.h"
#include "../profiler/KinetoProfiler.h"
#include "../profiler/LegacyProfiler.h"
#include "Graphs.h"
#include "MemoryHistory.h"
#include "Serialization.h"
#include "Sharing.h"
#include "Shutdown.h"

namespace py = pybind11;

namespace torch_backend {
namespace {

// Loaded but not yet active: probing a library must not touch PyTorch.
DeviceRuntime* g_loaded = nullptr;

void load(const std::string& path) { g_loaded = load_device_library(path); }

// Devices the loaded (not yet active) library reports, so that a backend with
// no hardware is never activated.
int loaded_device_count() {
  TORCH_CHECK(g_loaded != nullptr, "no device library has been loaded");
  int count = 0;
  const Status status = g_loaded->device_count(&count);
  TORCH_CHECK(status == kSuccess,
              "device_count failed: ", g_loaded->error_text(status));
  return count;
}

void activate_loaded() {
  TORCH_CHECK(g_loaded != nullptr, "no device library has been loaded");
  activate(g_loaded);
  register_metadata_serialization();
  register_device_profiler();
  register_legacy_profiler_stubs();
  register_graph_impl();
}

// torch.accelerator.synchronize's path: it raises a failed collective's error.
void synchronize(int device) {
  c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1)
      .synchronizeDevice(static_cast<c10::DeviceIndex>(device));
}

py::dict device_properties(int device) {
  check_device_index(device);
  DeviceProperties props;
  TORCH_BACKEND_CHECK(active_runtime().device_properties(device, &props));
  py::dict out;
  out["name"] = props.name;
  out["total_memory"] = props.total_memory;
  out["capability"] = props.capability;
  out["major"] = props.major;
  out["minor"] = props.minor;
  out["multi_processor_count"] = props.multi_processor_count;
  // None where the runtime does not say (what Inductor's heuristics expect).
  const auto known = [](int value) -> py::object {
    return value > 0 ? py::object(py::int_(value)) : py::object(py::none());
  };
  out["warp_size"] = known(props.warp_size);
  out["max_threads_per_block"] = known(props.max_threads_per_block);
  out["max_threads_per_multi_processor"] =
      known(props.max_threads_per_multi_processor);
  out["regs_per_multiprocessor"] = known(props.regs_per_multiprocessor);
  return out;
}

std::pair<size_t, size_t> mem_get_info(int device) {
  c10::DeviceGuard guard(
      {c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)});
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  TORCH_BACKEND_CHECK(active_runtime().mem_get_info(&free_bytes, &total_bytes));
  return {free_bytes, total_bytes};
}

// torch.cuda.memory_stats' flat "<stat>.<pool>.<metric>" layout.
py::dict memory_stats(int device) {
  check_device_index(device);
  const auto stats = device_allocator()->getDeviceStats(device);
  py::dict out;
  auto add_stat = [&](const std::string& name,
                      const c10::CachingAllocator::Stat& s) {
    out[py::str(name + ".current")] = s.current;
    out[py::str(name + ".peak")] = s.peak;
    out[py::str(name + ".allocated")] = s.allocated;
    out[py::str(name + ".freed")] = s.freed;
  };
  const std::pair<const char*, const c10::CachingAllocator::StatArray*>
      arrays[] = {{"allocation", &stats.allocation},
                  {"segment", &stats.segment},
                  {"active", &stats.active},
                  {"inactive_split", &stats.inactive_split},
                  {"allocated_bytes", &stats.allocated_bytes},
                  {"reserved_bytes", &stats.reserved_bytes},
                  {"active_bytes", &stats.active_bytes},
                  {"inactive_split_bytes", &stats.inactive_split_bytes},
                  {"requested_bytes", &stats.requested_bytes}};
  const char* pools[] = {"all", "small_pool", "large_pool"};
  for (const auto& [name, array] : arrays) {
    for (size_t i = 0; i < 3; ++i) {
      add_stat(std::string(name) + "." + pools[i], (*array)[i]);
    }
  }
  add_stat("oversize_allocations", stats.oversize_allocations);
  add_stat("oversize_segments", stats.oversize_segments);
  out["num_alloc_retries"] = stats.num_alloc_retries;
  out["num_ooms"] = stats.num_ooms;
  out["num_device_alloc"] = stats.num_device_alloc;
  out["num_device_free"] = stats.num_device_free;
  out["max_split_size"] = stats.max_split_size;
  return out;
}

// Generator access runs under the generator's mutex, as PyTorch's own does.
template <typename Fn>
auto with_generator(int device, Fn&& fn) {
  at::Generator gen = default_generator(device);  // shares the default
  std::lock_guard<std::mutex> lock(gen.mutex());
  return fn(gen);
}

py::bytes get_rng_state(int device) {
  return with_generator(device, [](at::Generator& gen) {
    const at::Tensor state = gen.get_state();
    return py::bytes(static_cast<const char*>(state.const_data_ptr()),
                     state.numel());
  });
}

void set_rng_state(int device, const std::string& bytes) {
  with_generator(device, [&](at::Generator& gen) {
    at::Tensor state = at::detail::empty_cpu(
        {static_cast<int64_t>(bytes.size())}, at::kByte, std::nullopt,
        std::nullopt, std::nullopt, std::nullopt);
    std::memcpy(state.data_ptr(), bytes.data(), bytes.size());
    gen.set_state(state);
    return 0;
  });
}

// Keeps the current stream busy (like torch.cuda._sleep), for tests.
void sleep_on_stream(unsigned long microseconds) {
  c10::impl::VirtualGuardImpl guard(c10::DeviceType::PrivateUse1);
  const c10::Stream stream = guard.getStream(guard.getDevice());
  TORCH_BACKEND_CHECK(active_runtime().stream_sleep(
      guard.getStreamNativeHandle(stream), microseconds));
}

}  // namespace
}  // namespace torch_backend

PYBIND11_MODULE(_C, m) {
  using namespace torch_backend;
  m.def("_load_device_library", &load, py::arg("path"));
  m.def("_loaded_device_count", &loaded_device_count);
  m.def("_activate", &activate_loaded);
  bind_graphs(m);
  m.def("_is_active", &has_active_runtime);
  m.def("_has_device_collectives",
        [] { return active_collectives() != nullptr; });
  m.def("_is_initialized", &is_initialized);
  m.def("_in_bad_fork", &in_bad_fork);
  m.def("_prepare_exit", &prepare_for_exit);
  m.def("_op_table", [] {
    std::vector<std::tuple<std::string, std::string, std::string, bool, bool>>
        rows;
    for (const OpTableRow& row : op_table()) {
      rows.emplace_back(row.op, row.family, row.kernel, row.on_device,
                        row.forced);
    }
    return rows;
  });
  m.def("_open_op_report", &open_op_report);
  // (op, device calls, zero-copy calls, copying calls, bytes copied, host ns)
  m.def("_close_op_report", [] {
    std::vector<
        std::tuple<std::string, int64_t, int64_t, int64_t, int64_t, int64_t>>
        rows;
    for (const OpReportRow& row : close_op_report()) {
      rows.emplace_back(row.op, row.device_calls, row.zero_copy_calls,
                        row.copying_calls, row.bytes_copied, row.host_ns);
    }
    return rows;
  });
  m.def("device_count", [] { return torch_backend::device_count(); });
  m.def("current_device", [] { return torch_backend::current_device(); });
  m.def("set_device", &set_current_device, py::arg("device"));
  // Without the GIL, as torch.cuda.synchronize: other threads (a watchdog's
  // flight-recorder dump among them) may need it while the device drains.
  m.def("synchronize", &synchronize, py::arg("device"),
        py::call_guard<py::gil_scoped_release>());
  m.def("device_properties", &device_properties, py::arg("device"));
  m.def("mem_get_info", &mem_get_info, py::arg("device"));
  m.def("memory_stats", &memory_stats, py::arg("device"));
  m.def("reset_peak_memory_stats", [](int device) {
    check_device_index(device);
    device_allocator()->resetPeakStats(device);
  });
  m.def("reset_accumulated_memory_stats", [](int device) {
    check_device_index(device);
    device_allocator()->resetAccumulatedStats(device);
  });
  m.def("empty_cache", [] { device_allocator()->emptyCache({0, 0}); });
  m.def("set_memory_fraction", [](double fraction, int device) {
    set_memory_fraction(fraction, device);
  });
  m.def("manual_seed", [](int device, uint64_t seed) {
    with_generator(device, [&](at::Generator& g) {
      g.set_current_seed(seed);
      return 0;
    });
  });
  m.def("seed", [](int device) {
    return with_generator(device, [](at::Generator& g) { return g.seed(); });
  });
  m.def("initial_seed", [](int device) {
    return with_generator(device,
                          [](at::Generator& g) { return g.current_seed(); });
  });
  m.def("get_rng_state", &get_rng_state, py::arg("device"));
  m.def("set_rng_state", &set_rng_state, py::arg("device"), py::arg("state"));
  m.def("stream_priority_range", [] {
    int least = 0;
    int greatest = 0;
    TORCH_BACKEND_CHECK(
        active_runtime().stream_priority_range(&least, &greatest));
    return std::make_pair(least, greatest);
  });
  m.def("_sleep", &sleep_on_stream, py::arg("microseconds"));
  // For host code that computes on device memory (Inductor's C++ kernels on a
  // host-addressable device): whether it may, and the wait before it does.
  m.def("_host_addressable",
        [] { return active_capabilities().host_addressable_memory; });
  m.def(
      "_wait_for_host_access",
      [](int device) {
        check_device_index(device);
        wait_for_host_access(
            c10::Device(c10::DeviceType::PrivateUse1,
                        static_cast<c10::DeviceIndex>(device)));
      },
      py::arg("device"));
  bind_sharing(m);
  bind_memory_history(m);
}
