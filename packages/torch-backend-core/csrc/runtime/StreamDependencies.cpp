#include "StreamDependencies.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace torch_backend {
namespace {

// What a stream (or an event, for the stream it was recorded on) waits for.
struct Tracked {
  std::vector<std::shared_ptr<StreamDependency>> pending;
  std::exception_ptr failure;  // sticky once set
};

struct Registry {
  std::mutex mutex;
  std::map<std::pair<c10::DeviceIndex, c10::StreamId>, Tracked> streams;
  std::unordered_map<void*, Tracked> events;
};

// Set by the first registration: until then every check is one load.
std::atomic<bool> g_used{false};
// Set while this thread polls dependencies (UncheckedQueries).
thread_local bool t_unchecked = false;

bool checks_apply() {
  return g_used.load(std::memory_order_acquire) && !t_unchecked;
}

Registry& registry() {
  static auto* instance = new Registry();  // never destroyed: used at exit
  return *instance;
}

std::pair<c10::DeviceIndex, c10::StreamId> key_of(const c10::Stream& stream) {
  return {stream.device_index(), stream.id()};
}

// Settles what `find` (called under the registry's lock) returns: a failed
// dependency becomes its sticky failure, succeeded ones are forgotten, running
// ones kept. Dependencies are polled outside the lock: their state() queries
// events, and event queries check dependencies here. Returns the failure.
template <class Find>
std::exception_ptr settle(Registry& r, Find find) {
  std::vector<std::shared_ptr<StreamDependency>> pending;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    Tracked* tracked = find();
    if (tracked == nullptr || tracked->failure) {
      return tracked == nullptr ? nullptr : tracked->failure;
    }
    pending = tracked->pending;
  }
  std::exception_ptr failure;
  std::vector<std::shared_ptr<StreamDependency>> succeeded;
  const UncheckedQueries unchecked;
  for (const auto& dependency : pending) {
    const StreamDependency::State state = dependency->state();
    if (state == StreamDependency::State::Failed) {
      failure = dependency->error();
      break;
    }
    if (state == StreamDependency::State::Succeeded) {
      succeeded.push_back(dependency);
    }
  }
  std::lock_guard<std::mutex> lock(r.mutex);
  Tracked* tracked = find();
  if (tracked == nullptr) {
    return failure;
  }
  if (failure && !tracked->failure) {
    tracked->failure = failure;
  }
  if (tracked->failure) {
    tracked->pending.clear();
    return tracked->failure;
  }
  auto& left = tracked->pending;
  for (const auto& done : succeeded) {
    left.erase(std::remove(left.begin(), left.end(), done), left.end());
  }
  return nullptr;
}

std::exception_ptr settle_stream(
    Registry& r, const std::pair<c10::DeviceIndex, c10::StreamId>& key) {
  return settle(r, [&]() -> Tracked* {
    auto found = r.streams.find(key);
    return found == r.streams.end() ? nullptr : &found->second;
  });
}

}  // namespace

UncheckedQueries::UncheckedQueries() : previous_(t_unchecked) {
  t_unchecked = true;
}

UncheckedQueries::~UncheckedQueries() { t_unchecked = previous_; }

void add_stream_dependency(const c10::Stream& stream,
                           std::shared_ptr<StreamDependency> dependency) {
  Registry& r = registry();
  g_used.store(true);
  bool crowded = false;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    crowded = r.streams[key_of(stream)].pending.size() >= 64;
  }
  if (crowded) {
    settle_stream(r, key_of(stream));  // a stream never synchronized: bound it
  }
  std::lock_guard<std::mutex> lock(r.mutex);
  Tracked& tracked = r.streams[key_of(stream)];
  if (!tracked.failure) {
    tracked.pending.push_back(std::move(dependency));
  }
}

void check_stream_dependencies(const c10::Stream& stream) {
  if (!checks_apply()) {
    return;
  }
  if (std::exception_ptr failure = settle_stream(registry(), key_of(stream))) {
    std::rethrow_exception(failure);
  }
}

void check_device_dependencies(c10::DeviceIndex device) {
  if (!checks_apply()) {
    return;
  }
  Registry& r = registry();
  std::vector<std::pair<c10::DeviceIndex, c10::StreamId>> keys;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto& [key, tracked] : r.streams) {
      if (key.first == device) {
        keys.push_back(key);
      }
    }
  }
  for (const auto& key : keys) {
    if (std::exception_ptr failure = settle_stream(r, key)) {
      std::rethrow_exception(failure);
    }
  }
}

void note_event_recorded(void* event, const c10::Stream& stream) {
  if (!g_used.load(std::memory_order_acquire)) {
    return;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.streams.find(key_of(stream));
  if (found != r.streams.end() &&
      (found->second.failure || !found->second.pending.empty())) {
    r.events[event] = found->second;
  } else {
    r.events.erase(event);  // (re-)recorded where nothing is waited for
  }
}

void note_event_waited(void* event, const c10::Stream& stream) {
  if (!g_used.load(std::memory_order_acquire)) {
    return;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.events.find(event);
  if (found == r.events.end()) {
    return;
  }
  Tracked& waiter = r.streams[key_of(stream)];
  if (waiter.failure) {
    return;
  }
  if (found->second.failure) {
    waiter.failure = found->second.failure;
    waiter.pending.clear();
    return;
  }
  const auto& more = found->second.pending;
  waiter.pending.insert(waiter.pending.end(), more.begin(), more.end());
}

void check_event_dependencies(void* event) {
  if (!checks_apply()) {
    return;
  }
  Registry& r = registry();
  const std::exception_ptr failure = settle(r, [&]() -> Tracked* {
    auto found = r.events.find(event);
    return found == r.events.end() ? nullptr : &found->second;
  });
  if (failure) {
    std::rethrow_exception(failure);
  }
}

void forget_event(void* event) noexcept {
  if (!g_used.load(std::memory_order_acquire)) {
    return;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.events.erase(event);
}

}  // namespace torch_backend
