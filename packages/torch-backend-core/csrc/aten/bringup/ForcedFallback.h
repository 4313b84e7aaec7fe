// Internal: TORCH_BACKEND_FORCE_FALLBACK=<regex>, for bisecting a bad kernel.
// ATen overloads whose name ("mul.out", "_softmax") the regular expression
// matches (anywhere: anchor it with ^ and $) keep the CPU fallback although
// the backend has a kernel for them; `python -m torch_backend ops` shows them
// as forced.
#pragma once

namespace torch_backend {

// Whether `qualified` is forced onto the fallback. The setting is read once,
// at the first call (activation); an invalid expression raises ValueError.
bool forced_to_fallback(const char* qualified);

}  // namespace torch_backend
