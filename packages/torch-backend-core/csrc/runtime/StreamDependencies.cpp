#include "StreamDependencies.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace torch_backend {
namespace {

using State = StreamDependency::State;

// A point in a stream's history: everything the stream's work enqueued up to
// that point waits for. A stream and each event recorded on it refer to such
// a node, never to a copy of what it holds: a registration adds a node whose
// parent is the stream's previous point, a wait for an event joins the
// event's node in. So the graph grows by one node per registration or wait,
// whatever the history, where copying each stream's list into every event and
// every waiting stream doubled it with each collective between two host
// synchronisations (issue 68). Once a node and everything it includes
// finished it collapses: it keeps its outcome and lets go of its parents and
// dependency, so memory holds what may still fail, no more.
//
// Every field is guarded by the registry's mutex. No node (nor dependency) is
// released under that mutex: releasing the last reference to a dependency may
// destroy its end event, whose destruction takes the mutex (forget_event).
struct Node {
  std::shared_ptr<StreamDependency> dependency;  // null for a join
  std::vector<std::shared_ptr<Node>> parents;    // earlier points included
  State state = State::Running;
  std::exception_ptr failure;

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Unlinks a long chain without recursing down it (a stream that was never
  // synchronised holds one node per collective it waited for).
  ~Node() {
    std::vector<std::shared_ptr<Node>> doomed = std::move(parents);
    while (!doomed.empty()) {
      std::shared_ptr<Node> node = std::move(doomed.back());
      doomed.pop_back();
      if (node.use_count() == 1) {  // the last reference: nobody can copy it
        for (auto& parent : node->parents) {
          doomed.push_back(std::move(parent));
        }
        node->parents.clear();
      }
    }
  }

  bool settled() const { return state != State::Running; }
};
using NodePtr = std::shared_ptr<Node>;

// What a stream waits for. `added` counts the nodes added since the last
// settle, `live` what that settle left running: settling again once as many
// were added as were left keeps the cost of settling O(1) amortised per node.
struct StreamHistory {
  NodePtr point;
  std::size_t added = 0;
  std::size_t live = 0;
};

// References taken out from under the registry's mutex, released after it.
using Released = std::vector<NodePtr>;

struct Registry {
  std::mutex mutex;
  std::map<std::pair<c10::DeviceIndex, c10::StreamId>, StreamHistory> streams;
  std::unordered_map<void*, NodePtr> events;
};

// Set by the first registration: until then every check is one load.
std::atomic<bool> g_used{false};
// Set while this thread polls dependencies (UncheckedQueries).
thread_local bool t_unchecked = false;
// Never below this many additions between settles of one stream.
constexpr std::size_t kMinAddedBeforeSettle = 64;

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

// Whether a point needs keeping: a failure (sticky) or something running.
bool matters(const NodePtr& node) {
  return node != nullptr && node->state != State::Succeeded;
}

// The point that includes both `a` and `b` (under the mutex).
NodePtr join(const NodePtr& a, const NodePtr& b) {
  if (!matters(b) || a == b) {
    return matters(a) ? a : nullptr;
  }
  if (!matters(a)) {
    return b;
  }
  if (a->state == State::Failed) {
    return a;  // sticky: nothing after a failure matters
  }
  if (b->state == State::Failed) {
    return b;
  }
  auto joined = std::make_shared<Node>();
  joined->parents = {a, b};
  return joined;
}

// What one settle found: the failure, if the point failed, and how many
// nodes it left running.
struct Outcome {
  std::exception_ptr failure;
  std::size_t live = 0;
};

// Settles `root` (taken under the mutex by the caller): polls the
// dependencies of every node it includes that has not settled, outside the
// mutex (state() queries events, and event queries come back here), then
// collapses what finished, oldest first.
Outcome settle(Registry& r, const NodePtr& root) {
  if (root == nullptr) {
    return {};
  }
  // Oldest first (post-order over the unsettled part of the graph), each
  // node once however many points share it.
  std::vector<NodePtr> order;
  std::vector<std::shared_ptr<StreamDependency>> to_poll;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (root->settled()) {
      return {root->failure, 0};
    }
    std::unordered_set<const Node*> seen{root.get()};
    std::vector<std::pair<NodePtr, std::size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->parents.size()) {
        const NodePtr& parent = node->parents[next++];
        if (!parent->settled() && seen.insert(parent.get()).second) {
          stack.emplace_back(parent, 0);
        }
        continue;
      }
      order.push_back(node);
      to_poll.push_back(node->dependency);
      stack.pop_back();
    }
  }
  std::vector<std::pair<State, std::exception_ptr>> polled(to_poll.size());
  {
    const UncheckedQueries unchecked;
    for (std::size_t i = 0; i < to_poll.size(); ++i) {
      if (to_poll[i] != nullptr) {
        const State state = to_poll[i]->state();
        polled[i] = {state,
                     state == State::Failed ? to_poll[i]->error() : nullptr};
      } else {
        polled[i] = {State::Succeeded, nullptr};
      }
    }
  }
  to_poll.clear();
  Released released;
  std::vector<std::shared_ptr<StreamDependency>> released_dependencies;
  Outcome outcome;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (std::size_t i = 0; i < order.size(); ++i) {
      Node& node = *order[i];
      if (node.settled()) {
        continue;  // another thread settled it meanwhile
      }
      State state = polled[i].first;
      std::exception_ptr failure = polled[i].second;
      for (const NodePtr& parent : node.parents) {
        if (state == State::Failed) {
          break;
        }
        if (parent->state == State::Failed) {
          state = State::Failed;
          failure = parent->failure;
        } else if (parent->state == State::Running) {
          state = State::Running;
        }
      }
      if (state == State::Running) {
        ++outcome.live;
        // What finished needs no keeping.
        auto finished = std::stable_partition(
            node.parents.begin(), node.parents.end(),
            [](const NodePtr& parent) { return !parent->settled(); });
        std::move(finished, node.parents.end(), std::back_inserter(released));
        node.parents.erase(finished, node.parents.end());
        continue;
      }
      node.state = state;
      node.failure = failure;
      std::move(node.parents.begin(), node.parents.end(),
                std::back_inserter(released));
      node.parents.clear();
      released_dependencies.push_back(std::move(node.dependency));
    }
    outcome.failure = root->failure;
  }
  return outcome;
}

// Settles what `stream` waits for; forgets it once everything finished.
std::exception_ptr settle_stream(
    Registry& r, const std::pair<c10::DeviceIndex, c10::StreamId>& key) {
  NodePtr point;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto found = r.streams.find(key);
    if (found == r.streams.end()) {
      return nullptr;
    }
    point = found->second.point;
  }
  const Outcome outcome = settle(r, point);
  Released released;
  std::lock_guard<std::mutex> lock(r.mutex);
  StreamHistory& history = r.streams[key];
  if (history.point == point) {
    history.added = 0;
    history.live = outcome.live;
    if (point != nullptr && point->state == State::Succeeded) {
      released.push_back(std::move(history.point));
      history.point = nullptr;
    }
  }
  return outcome.failure;
}

// Makes the point `extend(previous point)` returns the stream's newest, then
// settles the stream's history when enough was added since the last settle.
template <class Extend>
void advance(Registry& r, const std::pair<c10::DeviceIndex, c10::StreamId>& key,
             Extend extend) {
  bool crowded = false;
  {
    Released released;
    std::lock_guard<std::mutex> lock(r.mutex);
    StreamHistory& history = r.streams[key];
    NodePtr point = extend(history.point);
    if (point == history.point) {
      return;
    }
    released.push_back(std::move(history.point));
    history.point = std::move(point);
    crowded = ++history.added >= std::max(kMinAddedBeforeSettle, history.live);
  }
  if (crowded) {
    settle_stream(r, key);  // a stream never synchronised: bound it
  }
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
  auto node = std::make_shared<Node>();  // allocated outside the mutex
  node->dependency = std::move(dependency);
  advance(r, key_of(stream), [&](const NodePtr& previous) -> NodePtr {
    if (previous != nullptr && previous->state == State::Failed) {
      return previous;  // sticky: the stream failed for good
    }
    if (matters(previous)) {
      node->parents.push_back(previous);
    }
    return node;
  });
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
    for (const auto& [key, history] : r.streams) {
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
  Released released;
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.streams.find(key_of(stream));
  const NodePtr point =
      found == r.streams.end() ? nullptr : found->second.point;
  auto recorded = r.events.find(event);
  if (matters(point)) {
    if (recorded == r.events.end()) {
      r.events.emplace(event, point);
    } else {
      released.push_back(std::move(recorded->second));
      recorded->second = point;  // a reference, not a copy
    }
  } else if (recorded != r.events.end()) {
    // (Re-)recorded where nothing is waited for.
    released.push_back(std::move(recorded->second));
    r.events.erase(recorded);
  }
}

void note_event_waited(void* event, const c10::Stream& stream) {
  if (!g_used.load(std::memory_order_acquire)) {
    return;
  }
  Registry& r = registry();
  advance(r, key_of(stream), [&](const NodePtr& previous) -> NodePtr {
    auto found = r.events.find(event);
    return found == r.events.end() ? previous : join(previous, found->second);
  });
}

void check_event_dependencies(void* event) {
  if (!checks_apply()) {
    return;
  }
  Registry& r = registry();
  NodePtr point;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto found = r.events.find(event);
    if (found == r.events.end()) {
      return;
    }
    point = found->second;
  }
  const std::exception_ptr failure = settle(r, point).failure;
  {
    Released released;
    std::lock_guard<std::mutex> lock(r.mutex);
    auto found = r.events.find(event);
    if (found != r.events.end() && found->second == point &&
        point->state == State::Succeeded) {
      released.push_back(std::move(found->second));
      r.events.erase(found);
    }
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
}

void forget_event(void* event) noexcept {
  if (!g_used.load(std::memory_order_acquire)) {
    return;
  }
  Registry& r = registry();
  Released released;
  std::lock_guard<std::mutex> lock(r.mutex);
  auto found = r.events.find(event);
  if (found != r.events.end()) {
    released.push_back(std::move(found->second));
    r.events.erase(found);
  }
}

}  // namespace torch_backend
