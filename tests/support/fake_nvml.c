/* An emulated NVML (libnvidia-ml.so.1): the two calls PyTorch's fork-safe
 * CUDA device count makes. FAKE_NVML_DEVICE_COUNT sets the count; every call
 * is logged to FAKE_NVML_LOG when set, so tests see that probing happened. */
#include <stdio.h>
#include <stdlib.h>

static void log_call(const char* name) {
  const char* path = getenv("FAKE_NVML_LOG");
  if (path != NULL) {
    FILE* log = fopen(path, "a");
    if (log != NULL) {
      fprintf(log, "%s\n", name);
      fclose(log);
    }
  }
}

int nvmlInit(void) {
  log_call("nvmlInit");
  return 0;
}

int nvmlInit_v2(void) { return nvmlInit(); }

int nvmlDeviceGetCount_v2(unsigned int* count) {
  const char* value = getenv("FAKE_NVML_DEVICE_COUNT");
  log_call("nvmlDeviceGetCount_v2");
  *count = value != NULL ? (unsigned int)atoi(value) : 1u;
  return 0;
}

int nvmlShutdown(void) { return 0; }
