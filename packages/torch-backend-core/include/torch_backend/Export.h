#pragma once

#define TORCH_BACKEND_EXPORT __attribute__((visibility("default")))
#define TORCH_BACKEND_API TORCH_BACKEND_EXPORT
