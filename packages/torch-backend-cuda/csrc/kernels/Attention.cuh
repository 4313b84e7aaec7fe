// Fused scaled-dot-product attention, forward and backward (DeviceKernels.h):
// one thread per query row. The forward finds the row's maximum score, the
// sum of exponentials, then the weighted values, 64 output features at a
// time; the backward recomputes the probabilities from the forward's
// logsumexp, writes the query's gradient and adds into the keys' and values'
// gradients atomically (in float, or double, scratch converted at the end).
#pragma once

#include "Portable.cuh"

namespace gpu {

using torch_backend::AttentionBackwardCall;
using torch_backend::AttentionCall;

constexpr int kFeatureChunk = 64;

template <typename T>
GPU_HD Compute<T> at4(const TensorView& v, std::int64_t b, std::int64_t h,
                      std::int64_t i, std::int64_t j) {
  return load(static_cast<const T*>(
      v.data)[v.offset + b * v.strides[0] + h * v.strides[1] +
              i * v.strides[2] + j * v.strides[3]]);
}
template <typename T>
GPU_HD T& ref4(const TensorView& v, std::int64_t b, std::int64_t h,
               std::int64_t i, std::int64_t j) {
  return static_cast<T*>(
      v.data)[v.offset + b * v.strides[0] + h * v.strides[1] +
              i * v.strides[2] + j * v.strides[3]];
}

// What both directions compute the same way: the shapes, which keys a query
// sees, and the scaled, biased score.
template <typename T>
struct AttentionRows {
  TensorView query, key, value, bias;
  double scale;
  bool is_causal;

  GPU_HD std::int64_t heads() const { return query.sizes[1]; }
  GPU_HD std::int64_t queries() const { return query.sizes[2]; }
  GPU_HD std::int64_t keys() const { return key.sizes[2]; }
  GPU_HD std::int64_t width() const { return query.sizes[3]; }
  GPU_HD std::int64_t value_width() const { return value.sizes[3]; }
  GPU_HD void locate(std::int64_t row, std::int64_t* b, std::int64_t* h,
                     std::int64_t* i) const {
    *i = row % queries();
    *h = (row / queries()) % heads();
    *b = row / (queries() * heads());
  }
  GPU_HD bool sees(std::int64_t i, std::int64_t j) const {
    return !is_causal || j <= i;
  }
  GPU_HD Compute<T> score(std::int64_t b, std::int64_t h, std::int64_t i,
                          std::int64_t j) const {
    Compute<T> dot = 0;
    for (std::int64_t e = 0; e < width(); ++e) {
      dot += at4<T>(query, b, h, i, e) * at4<T>(key, b, h, j, e);
    }
    dot *= static_cast<Compute<T>>(scale);
    if (bias.data != nullptr) {
      dot += at4<T>(bias, b, h, i, j);
    }
    return dot;
  }
};

template <typename T>
struct AttentionFn {
  AttentionRows<T> rows;
  TensorView out, logsumexp;

  GPU_HD void operator()(std::int64_t row) const {
    using C = Compute<T>;
    std::int64_t b, h, i;
    rows.locate(row, &b, &h, &i);
    C peak = lowest<C>();
    for (std::int64_t j = 0; j < rows.keys(); ++j) {
      if (rows.sees(i, j)) {
        const C s = rows.score(b, h, i, j);
        peak = (s > peak || is_nan(s)) ? s : peak;
      }
    }
    C total = 0;
    for (std::int64_t j = 0; j < rows.keys(); ++j) {
      if (rows.sees(i, j)) {
        total += exp_of(rows.score(b, h, i, j) - peak);
      }
    }
    for (std::int64_t first = 0; first < rows.value_width();
         first += kFeatureChunk) {
      const std::int64_t count = rows.value_width() - first < kFeatureChunk
                                     ? rows.value_width() - first
                                     : kFeatureChunk;
      C sums[kFeatureChunk] = {};
      for (std::int64_t j = 0; j < rows.keys(); ++j) {
        if (!rows.sees(i, j)) {
          continue;
        }
        const C p = exp_of(rows.score(b, h, i, j) - peak);
        for (std::int64_t e = 0; e < count; ++e) {
          sums[e] += p * at4<T>(rows.value, b, h, j, first + e);
        }
      }
      for (std::int64_t e = 0; e < count; ++e) {
        ref4<T>(out, b, h, i, first + e) = store<T>(sums[e] / total);
      }
    }
    static_cast<float*>(
        logsumexp.data)[logsumexp.offset + b * logsumexp.strides[0] +
                        h * logsumexp.strides[1] + i * logsumexp.strides[2]] =
        static_cast<float>(peak + log_of(total));
  }
};

// Scratch gradients of keys and values, (B, H, S, width) contiguous in the
// compute type, added to atomically.
template <typename T>
struct Scratch {
  Compute<T>* data;
  std::int64_t heads, keys, width;
  GPU_HD Compute<T>* at(std::int64_t b, std::int64_t h, std::int64_t j,
                        std::int64_t e) const {
    return data + ((b * heads + h) * keys + j) * width + e;
  }
};

template <typename T>
struct AttentionBackwardFn {
  AttentionRows<T> rows;
  TensorView grad_query, grad_out, out, logsumexp;
  Scratch<T> grad_key, grad_value;

  GPU_HD void operator()(std::int64_t row) const {
    using C = Compute<T>;
    std::int64_t b, h, i;
    rows.locate(row, &b, &h, &i);
    const C lse = static_cast<C>(static_cast<const float*>(
        logsumexp.data)[logsumexp.offset + b * logsumexp.strides[0] +
                        h * logsumexp.strides[1] + i * logsumexp.strides[2]]);
    C d = 0;  // sum(dO * O): the softmax backward's row term
    for (std::int64_t e = 0; e < rows.value_width(); ++e) {
      d += at4<T>(grad_out, b, h, i, e) * at4<T>(out, b, h, i, e);
    }
    const C scale = static_cast<C>(rows.scale);
    for (std::int64_t first = 0; first < rows.width(); first += kFeatureChunk) {
      const std::int64_t count = rows.width() - first < kFeatureChunk
                                     ? rows.width() - first
                                     : kFeatureChunk;
      C sums[kFeatureChunk] = {};
      for (std::int64_t j = 0; j < rows.keys(); ++j) {
        if (!rows.sees(i, j)) {
          continue;
        }
        const C p = exp_of(rows.score(b, h, i, j) - lse);
        C dp = 0;
        for (std::int64_t e = 0; e < rows.value_width(); ++e) {
          dp += at4<T>(grad_out, b, h, i, e) * at4<T>(rows.value, b, h, j, e);
        }
        const C ds = p * (dp - d) * scale;
        for (std::int64_t e = 0; e < count; ++e) {
          sums[e] += ds * at4<T>(rows.key, b, h, j, first + e);
        }
        if (first == 0) {  // once per key: its gradients from this query
          for (std::int64_t e = 0; e < rows.width(); ++e) {
            atomic_add<C>(grad_key.at(b, h, j, e),
                          ds * at4<T>(rows.query, b, h, i, e));
          }
          for (std::int64_t e = 0; e < rows.value_width(); ++e) {
            atomic_add<C>(grad_value.at(b, h, j, e),
                          p * at4<T>(grad_out, b, h, i, e));
          }
        }
      }
      for (std::int64_t e = 0; e < count; ++e) {
        ref4<T>(grad_query, b, h, i, first + e) = store<T>(sums[e]);
      }
    }
  }
};

template <typename T>
struct ZeroFn {
  T* data;
  GPU_HD void operator()(std::int64_t k) const { data[k] = T(0); }
};

// grad (B, H, S, width), any strides, from the contiguous scratch.
template <typename T>
struct StoreGradFn {
  Scratch<T> scratch;
  TensorView grad;
  GPU_HD void operator()(std::int64_t k) const {
    const std::int64_t e = k % scratch.width;
    const std::int64_t j = (k / scratch.width) % scratch.keys;
    const std::int64_t h = (k / (scratch.width * scratch.keys)) % scratch.heads;
    const std::int64_t b = k / (scratch.width * scratch.keys * scratch.heads);
    ref4<T>(grad, b, h, j, e) = store<T>(scratch.data[k]);
  }
};

// The rows of a forward or backward call (both carry these fields).
template <typename T, typename Call>
AttentionRows<T> rows_of(const Call& call) {
  return {call.query, call.key,   call.value,
          call.bias,  call.scale, call.is_causal};
}

template <typename T>
struct AttentionJob {
  static Status run(const KernelContext& ctx, const AttentionCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      const AttentionFn<T> fn{rows_of<T>(call), call.out, call.logsumexp};
      const std::int64_t count =
          call.query.sizes[0] * call.query.sizes[1] * call.query.sizes[2];
      return launch_each(ctx, count, fn);
    }
  }
};

template <typename T>
struct AttentionBackwardJob {
  static Status run(const KernelContext& ctx,
                    const AttentionBackwardCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      using C = Compute<T>;
      const AttentionRows<T> rows = rows_of<T>(call);
      const std::int64_t batch = call.query.sizes[0], heads = rows.heads(),
                         keys = rows.keys();
      const std::int64_t key_count = batch * heads * keys * rows.width();
      const std::int64_t value_count =
          batch * heads * keys * rows.value_width();
      torch_backend::KernelWorkspace workspace(
          ctx, static_cast<std::size_t>(key_count + value_count) * sizeof(C));
      C* scratch = static_cast<C*>(workspace.get());
      const Scratch<T> grad_key{scratch, heads, keys, rows.width()};
      const Scratch<T> grad_value{scratch + key_count, heads, keys,
                                  rows.value_width()};
      Status status =
          launch_each(ctx, key_count + value_count, ZeroFn<C>{scratch});
      if (status == kSuccess) {
        const AttentionBackwardFn<T> fn{
            rows,           call.grad_query, call.grad_out, call.out,
            call.logsumexp, grad_key,        grad_value};
        status = launch_each(ctx, batch * heads * rows.queries(), fn);
      }
      if (status == kSuccess) {
        status = launch_each(ctx, key_count,
                             StoreGradFn<T>{grad_key, call.grad_key});
      }
      if (status == kSuccess) {
        status = launch_each(ctx, value_count,
                             StoreGradFn<T>{grad_value, call.grad_value});
      }
      return status;
    }
  }
};

inline Status attention(const KernelContext& ctx, const AttentionCall& call) {
  return dispatch<AttentionJob>(call.query.dtype, ctx, call);
}
inline Status attention_backward(const KernelContext& ctx,
                                 const AttentionBackwardCall& call) {
  return dispatch<AttentionBackwardJob>(call.query.dtype, ctx, call);
}

}  // namespace gpu
