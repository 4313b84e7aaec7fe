// The ACL emulator's model capture (aclmdlRI*): streams record their tasks
// into a model instead of running them; aclmdlRIExecuteAsync runs the model
// as one task of a stream (Streams.h). As in CANN: capture begins on a
// stream, streams that wait for an event recorded in the capture join it,
// waiting on the host for a capturing stream fails and invalidates the
// capture, and aclmdlRICaptureEnd on an invalidated capture fails.
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "Emulator.h"
#include "Streams.h"

namespace acl_emulator {
namespace {

std::shared_ptr<Model> capture_of(Stream* stream) {
  const std::lock_guard<std::mutex> lock(stream->mutex);
  return stream->capture;
}

void set_capture(Stream* stream, std::shared_ptr<Model> model) {
  const std::lock_guard<std::mutex> lock(stream->mutex);
  stream->capture = std::move(model);
}

}  // namespace

bool open_capture(const Marker& marker) {
  const std::shared_ptr<Model> model = marker.captured_in.lock();
  if (model == nullptr) {
    return false;
  }
  const std::lock_guard<std::mutex> lock(model->mutex);
  return !model->ended;
}

bool join_capture(Stream* stream, const Marker& marker) {
  const std::shared_ptr<Model> model = marker.captured_in.lock();
  if (model == nullptr) {
    return false;
  }
  {
    const std::lock_guard<std::mutex> lock(model->mutex);
    if (model->ended) {
      return false;
    }
    if (std::find(model->streams.begin(), model->streams.end(), stream) ==
        model->streams.end()) {
      model->streams.push_back(stream);
    }
  }
  set_capture(stream, model);
  return true;
}

aclError refuse_if_capturing(Stream* stream, const char* call) {
  const std::shared_ptr<Model> model = capture_of(stream);
  if (model == nullptr) {
    return ACL_SUCCESS;
  }
  {
    const std::lock_guard<std::mutex> lock(model->mutex);
    if (model->invalidated.empty()) {
      model->invalidated = call;
    }
  }
  return fail(ACL_ERROR_RT_PARAM_INVALID,
              std::string(call) +
                  ": the stream is being captured (aclmdlRICaptureBegin); "
                  "the capture is invalidated");
}

}  // namespace acl_emulator

using namespace acl_emulator;

extern "C" {

aclError aclmdlRICaptureBegin(aclrtStream stream,
                              aclmdlRICaptureMode /*mode*/) {
  int index = 0;
  if (const aclError status =
          device_of_thread("aclmdlRICaptureBegin", &index)) {
    return status;
  }
  if (injected_fault("aclmdlRICaptureBegin")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  Stream* target = stream_of(stream, index);
  if (capture_of(target) != nullptr) {
    return fail(ACL_ERROR_RT_PARAM_INVALID,
                "aclmdlRICaptureBegin: the stream is already being captured");
  }
  auto model = std::make_shared<Model>(target);
  model->streams.push_back(target);
  set_capture(target, std::move(model));
  return ACL_SUCCESS;
}

aclError aclmdlRICaptureGetInfo(aclrtStream stream,
                                aclmdlRICaptureStatus* status,
                                aclmdlRI* modelRI) {
  if (status == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclmdlRICaptureGetInfo: null status");
  }
  int index = 0;
  if (const aclError error =
          device_of_thread("aclmdlRICaptureGetInfo", &index)) {
    return error;
  }
  const std::shared_ptr<Model> model = capture_of(stream_of(stream, index));
  *status = ACL_MODEL_RI_CAPTURE_STATUS_NONE;
  if (model != nullptr) {
    const std::lock_guard<std::mutex> lock(model->mutex);
    *status = model->invalidated.empty()
                  ? ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE
                  : ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED;
  }
  if (modelRI != nullptr) {
    *modelRI = model.get();
  }
  return ACL_SUCCESS;
}

aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI* modelRI) {
  if (modelRI == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclmdlRICaptureEnd: null modelRI");
  }
  int index = 0;
  if (const aclError status = device_of_thread("aclmdlRICaptureEnd", &index)) {
    return status;
  }
  Stream* target = stream_of(stream, index);
  const std::shared_ptr<Model> model = capture_of(target);
  if (model == nullptr || model->origin != target) {
    return fail(ACL_ERROR_RT_PARAM_INVALID,
                "aclmdlRICaptureEnd: no capture began on this stream");
  }
  std::vector<Stream*> members;
  std::string invalidated;
  {
    const std::lock_guard<std::mutex> lock(model->mutex);
    model->ended = true;
    members = model->streams;
    invalidated = model->invalidated;
  }
  for (Stream* member : members) {
    set_capture(member, nullptr);
  }
  if (!invalidated.empty()) {
    return fail(
        ACL_ERROR_RT_PARAM_INVALID,
        "aclmdlRICaptureEnd: the capture was invalidated by " + invalidated);
  }
  // The caller owns the model until aclmdlRIDestroy.
  *modelRI = new std::shared_ptr<Model>(model);
  return ACL_SUCCESS;
}

aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream) {
  if (modelRI == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclmdlRIExecuteAsync: null modelRI");
  }
  // Shared with the task: a model destroyed while it runs stays alive.
  std::shared_ptr<Model> model = *static_cast<std::shared_ptr<Model>*>(modelRI);
  return enqueue(
      stream,
      [model] {
        aclError first = ACL_SUCCESS;
        for (const std::function<aclError()>& task : model->tasks) {
          const aclError status = task();
          first = first != ACL_SUCCESS ? first : status;
        }
        return first;
      },
      "aclmdlRIExecuteAsync");
}

aclError aclmdlRIDestroy(aclmdlRI modelRI) {
  if (modelRI == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclmdlRIDestroy: null modelRI");
  }
  delete static_cast<std::shared_ptr<Model>*>(modelRI);
  return ACL_SUCCESS;
}

}  // extern "C"
