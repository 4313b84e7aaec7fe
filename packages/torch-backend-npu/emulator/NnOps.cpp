// The ACL emulator's aclnn operators beyond element-wise ones (Operators.h
// holds the machinery): dropout's mask from (seed, offset), copies and fills,
// GEMM, reductions, softmax, losses, layer and batch norm, indexing, extrema
// along a dimension.
#include "Operators.h"

// ---- dropout: a bit mask drawn from (seed, offset), then applied ----------
// Bit i of the mask (byte i / 8, bit i % 8) keeps element i when a uniform
// draw for counter offset + i falls below 1 - prob. The emulator's own
// counter-based generator (CANN's is Philox): reproducible from seed and
// offset, as the real one is.
namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::int64_t mask_bytes(std::int64_t elements) {
  return (elements + 127) / 128 * 128 / 8;
}

void draw_mask(at::Tensor& bits, std::int64_t elements, double prob,
               std::uint64_t seed, std::uint64_t offset) {
  auto* out = bits.data_ptr<std::uint8_t>();
  std::memset(out, 0, bits.numel());
  const double keep = 1.0 - prob;
  for (std::int64_t i = 0; i < elements; ++i) {
    const std::uint64_t draw = mix(seed ^ mix(offset + i));
    const double u = static_cast<double>(draw >> 40) / 16777216.0;
    if (u < keep) {
      out[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
    }
  }
}

// Checks shared by both forms; the number of elements, or -1.
std::int64_t plan_mask(Plan& plan, const aclIntArray* shape, double prob,
                       aclDataType prob_dtype, const at::Tensor& bits) {
  std::int64_t elements = 1;
  for (const std::int64_t size : plan.ints(shape)) {
    elements *= size;
  }
  if (prob < 0 || prob > 1) {
    fail(ACLNN_ERR_PARAM_INVALID,
         "aclnnDropoutGenMask: prob must be in [0, 1]");
    return -1;
  }
  if (prob_dtype != ACL_FLOAT && prob_dtype != ACL_FLOAT16 &&
      prob_dtype != ACL_BF16) {
    fail(ACLNN_ERR_PARAM_INVALID,
         "aclnnDropoutGenMask: probDataType must be FLOAT, FLOAT16 or BF16");
    return -1;
  }
  if (bits.defined() && (bits.scalar_type() != at::kByte ||
                         bits.numel() != mask_bytes(elements))) {
    fail(ACLNN_ERR_PARAM_INVALID,
         "aclnnDropoutGenMask: out must be UINT8 of align(elements, 128) / 8 "
         "bytes");
    return -1;
  }
  return elements;
}

}  // namespace

EMULATOR_OP aclnnStatus aclnnDropoutGenMaskV2GetWorkspaceSize(
    const aclIntArray* shape, double prob, int64_t seed, int64_t offset,
    aclDataType probDataType, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnDropoutGenMaskV2");
  auto bits = plan.required(out);
  const std::int64_t elements =
      plan_mask(plan, shape, prob, probDataType, bits);
  if (elements < 0) {
    return ACLNN_ERR_PARAM_INVALID;
  }
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    draw_mask(bits, elements, prob, static_cast<std::uint64_t>(seed),
              static_cast<std::uint64_t>(offset));
  });
}
EMULATOR_LAUNCH(aclnnDropoutGenMaskV2)

EMULATOR_OP aclnnStatus aclnnDropoutGenMaskV2TensorGetWorkspaceSize(
    const aclIntArray* shape, double prob, const aclTensor* seedTensor,
    const aclTensor* offsetTensor, int64_t offset, aclDataType probDataType,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnDropoutGenMaskV2Tensor");
  auto bits = plan.required(out), seed = plan.required(seedTensor),
       base = plan.required(offsetTensor);
  const std::int64_t elements =
      plan_mask(plan, shape, prob, probDataType, bits);
  if (elements < 0) {
    return ACLNN_ERR_PARAM_INVALID;
  }
  if (seed.scalar_type() != at::kLong || seed.numel() != 1 ||
      base.scalar_type() != at::kLong || base.numel() != 1) {
    return fail(ACLNN_ERR_PARAM_INVALID,
                "aclnnDropoutGenMaskV2Tensor: seedTensor and offsetTensor "
                "must be INT64 of shape [1]");
  }
  // Seed and offset are read when the operator runs, not when it is planned.
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    draw_mask(bits, elements, prob,
              static_cast<std::uint64_t>(seed.item<int64_t>()),
              static_cast<std::uint64_t>(base.item<int64_t>() + offset));
  });
}
EMULATOR_LAUNCH(aclnnDropoutGenMaskV2Tensor)

EMULATOR_OP aclnnStatus aclnnDropoutDoMaskGetWorkspaceSize(
    const aclTensor* self, const aclTensor* mask, double prob, aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnDropoutDoMask");
  auto a = plan.required(self), bits = plan.required(mask),
       o = plan.required(out);
  if (a.defined() && bits.defined() &&
      (bits.scalar_type() != at::kByte ||
       bits.numel() < mask_bytes(a.numel()) || !a.is_contiguous() ||
       !o.is_contiguous() || o.numel() != a.numel())) {
    return fail(ACLNN_ERR_PARAM_INVALID,
                "aclnnDropoutDoMask: contiguous self and out of one size, and "
                "a UINT8 mask of align(elements, 128) / 8 bytes");
  }
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    const auto* keep = bits.data_ptr<std::uint8_t>();
    const std::int64_t n = a.numel();
    at::Tensor kept = at::empty({n}, a.options().dtype(at::kFloat));
    float* k = kept.data_ptr<float>();
    const float scale =
        prob >= 1 ? 0.0f : static_cast<float>(1.0 / (1.0 - prob));
    for (std::int64_t i = 0; i < n; ++i) {
      k[i] = (keep[i / 8] >> (i % 8)) & 1u ? scale : 0.0f;
    }
    o.view({n}).copy_(at::mul(a.reshape({n}).to(at::kFloat), kept));
  });
}
EMULATOR_LAUNCH(aclnnDropoutDoMask)

EMULATOR_OP aclnnStatus aclnnInplaceCopyGetWorkspaceSize(
    aclTensor* selfRef, const aclTensor* src, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnInplaceCopy");
  auto dst = plan.required(selfRef), from = plan.required(src);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { dst.copy_(from); });
}
EMULATOR_LAUNCH(aclnnInplaceCopy)

EMULATOR_OP aclnnStatus aclnnInplaceFillScalarGetWorkspaceSize(
    aclTensor* selfRef, const aclScalar* value, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnInplaceFillScalar");
  auto dst = plan.required(selfRef);
  auto v = plan.scalar(value);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { dst.fill_(v); });
}
EMULATOR_LAUNCH(aclnnInplaceFillScalar)

EMULATOR_OP aclnnStatus aclnnBaddbmmGetWorkspaceSize(
    const aclTensor* self, const aclTensor* batch1, const aclTensor* batch2,
    const aclScalar* beta, const aclScalar* alpha, aclTensor* out,
    int8_t /*cubeMathType*/, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnBaddbmm");
  auto c = plan.required(self), a = plan.required(batch1),
       b = plan.required(batch2), o = plan.required(out);
  auto be = plan.scalar(beta), al = plan.scalar(alpha);
  // Computed aside first: self may be out itself (addmm_).
  return plan.finish(workspaceSize, executor, kScratch,
                     [=]() mutable { o.copy_(at::baddbmm(c, a, b, be, al)); });
}
EMULATOR_LAUNCH(aclnnBaddbmm)

EMULATOR_OP aclnnStatus aclnnReduceSumGetWorkspaceSize(
    const aclTensor* self, const aclIntArray* dims, bool keepDims,
    aclDataType dtype, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnReduceSum");
  auto a = plan.required(self), o = plan.required(out);
  auto d = plan.ints(dims);
  const auto type = aten_dtype(dtype);
  return plan.finish(workspaceSize, executor, kScratch,
                     [=]() mutable { at::sum_out(o, a, d, keepDims, type); });
}
EMULATOR_LAUNCH(aclnnReduceSum)

EMULATOR_OP aclnnStatus
aclnnMeanGetWorkspaceSize(const aclTensor* self, const aclIntArray* dim,
                          bool keepDim, aclDataType dtype, aclTensor* out,
                          uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnMean");
  auto a = plan.required(self), o = plan.required(out);
  auto d = plan.ints(dim);
  const auto type = aten_dtype(dtype);
  return plan.finish(workspaceSize, executor, kScratch,
                     [=]() mutable { at::mean_out(o, a, d, keepDim, type); });
}
EMULATOR_LAUNCH(aclnnMean)

#define EMULATOR_EXTREMUM(Name, aten_out)                                  \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                          \
      const aclTensor* self, const aclIntArray* dim, bool keepDim,         \
      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) { \
    Plan plan(#Name);                                                      \
    auto a = plan.required(self), o = plan.required(out);                  \
    auto d = plan.ints(dim);                                               \
    return plan.finish(workspaceSize, executor, kScratch,                  \
                       [=]() mutable { aten_out(o, a, d, keepDim); });     \
  }                                                                        \
  EMULATOR_LAUNCH(Name)

EMULATOR_EXTREMUM(aclnnAmax, at::amax_out)
EMULATOR_EXTREMUM(aclnnAmin, at::amin_out)

#define EMULATOR_SOFTMAX(Name, aten_out)                               \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                      \
      const aclTensor* self, int64_t dim, aclTensor* out,              \
      uint64_t* workspaceSize, aclOpExecutor** executor) {             \
    Plan plan(#Name);                                                  \
    auto a = plan.required(self), o = plan.required(out);              \
    return plan.finish(workspaceSize, executor, kScratch,              \
                       [=]() mutable { aten_out(o, a, dim, false); }); \
  }                                                                    \
  EMULATOR_LAUNCH(Name)

#define EMULATOR_SOFTMAX_BACKWARD(Name, aten_out)                          \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                          \
      const aclTensor* gradOutput, const aclTensor* output, int64_t dim,   \
      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) { \
    Plan plan(#Name);                                                      \
    auto g = plan.required(gradOutput), y = plan.required(output),         \
         o = plan.required(out);                                           \
    return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {  \
      aten_out(o, g, y, dim, y.scalar_type());                             \
    });                                                                    \
  }                                                                        \
  EMULATOR_LAUNCH(Name)

EMULATOR_SOFTMAX(aclnnSoftmax, at::_softmax_out)
EMULATOR_SOFTMAX(aclnnLogSoftmax, at::_log_softmax_out)
EMULATOR_SOFTMAX_BACKWARD(aclnnSoftmaxBackward, at::_softmax_backward_data_out)
EMULATOR_SOFTMAX_BACKWARD(aclnnLogSoftmaxBackward,
                          at::_log_softmax_backward_data_out)

EMULATOR_OP aclnnStatus aclnnNLLLossGetWorkspaceSize(
    const aclTensor* self, const aclTensor* target, const aclTensor* weight,
    int64_t reduction, int64_t ignoreIndex, aclTensor* out,
    aclTensor* totalWeightOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnNLLLoss");
  auto x = plan.required(self), t = plan.required(target),
       w = plan.tensor(weight), o = plan.required(out),
       total = plan.required(totalWeightOut);
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    at::nll_loss_forward_out(o, total, x, t, w, reduction, ignoreIndex);
  });
}
EMULATOR_LAUNCH(aclnnNLLLoss)

EMULATOR_OP aclnnStatus aclnnNLLLossBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self, const aclTensor* target,
    const aclTensor* weight, int64_t reduction, int64_t ignoreIndex,
    const aclTensor* totalWeight, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnNLLLossBackward");
  auto g = plan.required(gradOutput), x = plan.required(self),
       t = plan.required(target), w = plan.tensor(weight),
       total = plan.required(totalWeight), o = plan.required(out);
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    at::nll_loss_backward_out(o, g, x, t, w, reduction, ignoreIndex, total);
  });
}
EMULATOR_LAUNCH(aclnnNLLLossBackward)

EMULATOR_OP aclnnStatus aclnnLayerNormGetWorkspaceSize(
    const aclTensor* input, const aclIntArray* normalizedShape,
    const aclTensor* weightOptional, const aclTensor* biasOptional, double eps,
    aclTensor* out, aclTensor* meanOutOptional, aclTensor* rstdOutOptional,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnLayerNorm");
  auto x = plan.required(input), w = plan.tensor(weightOptional),
       b = plan.tensor(biasOptional), o = plan.required(out),
       mean = plan.tensor(meanOutOptional), rstd = plan.tensor(rstdOutOptional);
  auto shape = plan.ints(normalizedShape);
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    auto [y, m, r] = at::native_layer_norm(x, shape, w, b, eps);
    o.copy_(y);
    if (mean.defined()) {
      mean.copy_(m.reshape(mean.sizes()));
    }
    if (rstd.defined()) {
      rstd.copy_(r.reshape(rstd.sizes()));
    }
  });
}
EMULATOR_LAUNCH(aclnnLayerNorm)

// ---- normalisation backward: what layer and batch norm share -------------
namespace {

// aclnn's outputMask (which of the three gradients to compute), or
// `otherwise` where the caller passed none.
std::array<bool, 3> output_mask(const aclBoolArray* given,
                                std::array<bool, 3> otherwise) {
  if (given != nullptr && given->values.size() == 3) {
    return {given->values[0], given->values[1], given->values[2]};
  }
  return otherwise;
}

// The gradients the mask asked for, copied into the outputs the caller passed.
void copy_gradients(
    const std::array<bool, 3>& mask, const std::array<at::Tensor, 3>& outputs,
    const std::tuple<at::Tensor, at::Tensor, at::Tensor>& grads) {
  const std::array<at::Tensor, 3> computed = {
      std::get<0>(grads), std::get<1>(grads), std::get<2>(grads)};
  for (std::size_t i = 0; i < 3; ++i) {
    if (mask[i] && outputs[i].defined()) {
      outputs[i].copy_(computed[i]);
    }
  }
}

}  // namespace

EMULATOR_OP aclnnStatus aclnnLayerNormBackwardGetWorkspaceSize(
    const aclTensor* gradOut, const aclTensor* input,
    const aclIntArray* normalizedShape, const aclTensor* mean,
    const aclTensor* rstd, const aclTensor* weightOptional,
    const aclTensor* biasOptional, const aclBoolArray* outputMask,
    aclTensor* gradInputOut, aclTensor* gradWeightOut, aclTensor* gradBiasOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnLayerNormBackward");
  auto g = plan.required(gradOut), x = plan.required(input),
       m = plan.required(mean), r = plan.required(rstd),
       w = plan.tensor(weightOptional), b = plan.tensor(biasOptional),
       gx = plan.tensor(gradInputOut), gw = plan.tensor(gradWeightOut),
       gb = plan.tensor(gradBiasOut);
  auto shape = plan.ints(normalizedShape);
  const std::array<bool, 3> mask = output_mask(outputMask, {true, true, true});
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    // ATen's kernel takes mean and rstd with the normalised dims kept as 1s.
    std::vector<int64_t> stats_shape(
        x.sizes().begin(),
        x.sizes().end() - static_cast<int64_t>(shape.size()));
    stats_shape.resize(x.dim(), 1);
    // ATen's kernel shapes grad_bias after bias, which aclnn does not need.
    const at::Tensor bias =
        b.defined() || !mask[2] ? b : at::empty(gb.sizes(), gb.options());
    copy_gradients(
        mask, {gx, gw, gb},
        at::native_layer_norm_backward(g, x, shape, m.reshape(stats_shape),
                                       r.reshape(stats_shape), w, bias, mask));
  });
}
EMULATOR_LAUNCH(aclnnLayerNormBackward)

EMULATOR_OP aclnnStatus aclnnBatchNormGetWorkspaceSize(
    const aclTensor* input, const aclTensor* weight, const aclTensor* bias,
    aclTensor* runningMean, aclTensor* runningVar, bool training,
    double momentum, double eps, aclTensor* output, aclTensor* saveMean,
    aclTensor* saveInvstd, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnBatchNorm");
  auto x = plan.required(input), w = plan.tensor(weight), b = plan.tensor(bias),
       rm = plan.tensor(runningMean), rv = plan.tensor(runningVar),
       o = plan.required(output), sm = plan.tensor(saveMean),
       si = plan.tensor(saveInvstd);
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    // Updates the running statistics in place, as aclnn does.
    auto [y, mean, invstd] =
        at::native_batch_norm(x, w, b, rm, rv, training, momentum, eps);
    o.copy_(y);
    if (sm.defined() && mean.numel() == sm.numel()) {
      sm.copy_(mean);
    }
    if (si.defined() && invstd.numel() == si.numel()) {
      si.copy_(invstd);
    }
  });
}
EMULATOR_LAUNCH(aclnnBatchNorm)

EMULATOR_OP aclnnStatus aclnnBatchNormBackwardGetWorkspaceSize(
    const aclTensor* gradOut, const aclTensor* input, const aclTensor* weight,
    const aclTensor* runningMean, const aclTensor* runningVar,
    const aclTensor* saveMean, const aclTensor* saveInvstd, bool training,
    double eps, const aclBoolArray* outputMask, aclTensor* gradInput,
    aclTensor* gradWeight, aclTensor* gradBias, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnBatchNormBackward");
  auto g = plan.required(gradOut), x = plan.required(input),
       w = plan.tensor(weight), rm = plan.tensor(runningMean),
       rv = plan.tensor(runningVar), sm = plan.tensor(saveMean),
       si = plan.tensor(saveInvstd), gx = plan.tensor(gradInput),
       gw = plan.tensor(gradWeight), gb = plan.tensor(gradBias);
  const std::array<bool, 3> mask =
      output_mask(outputMask, {gx.defined(), gw.defined(), gb.defined()});
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    copy_gradients(mask, {gx, gw, gb},
                   at::native_batch_norm_backward(g, x, w, rm, rv, sm, si,
                                                  training, eps, mask));
  });
}
EMULATOR_LAUNCH(aclnnBatchNormBackward)

// out = self gathered along dim by index (index_select, gather).
#define EMULATOR_GATHER(Name, aten_op)                                     \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                          \
      const aclTensor* self, int64_t dim, const aclTensor* index,          \
      aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) { \
    Plan plan(#Name);                                                      \
    auto a = plan.required(self), i = plan.required(index),                \
         o = plan.required(out);                                           \
    return plan.finish(workspaceSize, executor, 0,                         \
                       [=]() mutable { o.copy_(aten_op(a, dim, i)); });    \
  }                                                                        \
  EMULATOR_LAUNCH(Name)

EMULATOR_GATHER(aclnnIndexSelect, at::index_select)
EMULATOR_GATHER(aclnnGather, at::gather)

// Computed aside first: self may be out itself (core accumulates in place).
EMULATOR_OP aclnnStatus aclnnScatterAddGetWorkspaceSize(
    const aclTensor* self, int64_t dim, const aclTensor* index,
    const aclTensor* src, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnScatterAdd");
  auto a = plan.required(self), i = plan.required(index),
       s = plan.required(src), o = plan.required(out);
  return plan.finish(workspaceSize, executor, 0,
                     [=]() mutable { o.copy_(at::scatter_add(a, dim, i, s)); });
}
EMULATOR_LAUNCH(aclnnScatterAdd)

EMULATOR_OP aclnnStatus aclnnIndexAddGetWorkspaceSize(
    const aclTensor* self, int64_t dim, const aclTensor* index,
    const aclTensor* source, const aclScalar* alpha, aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnIndexAdd");
  auto a = plan.required(self), i = plan.required(index),
       s = plan.required(source), o = plan.required(out);
  auto scale = plan.scalar(alpha);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    o.copy_(at::index_add(a, dim, i, s, scale));
  });
}
EMULATOR_LAUNCH(aclnnIndexAdd)

// Values and indices of the extremum along dim.
#define EMULATOR_ARG_EXTREMUM(Name, aten_op)                                   \
  EMULATOR_OP aclnnStatus Name##GetWorkspaceSize(                              \
      const aclTensor* self, int64_t dim, bool keepdim, aclTensor* out,        \
      aclTensor* indices, uint64_t* workspaceSize, aclOpExecutor** executor) { \
    Plan plan(#Name);                                                          \
    auto a = plan.required(self), o = plan.required(out),                      \
         i = plan.required(indices);                                           \
    return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {      \
      auto [values, positions] = aten_op(a, dim, keepdim);                     \
      o.copy_(values);                                                         \
      i.copy_(positions);                                                      \
    });                                                                        \
  }                                                                            \
  EMULATOR_LAUNCH(Name)

EMULATOR_ARG_EXTREMUM(aclnnMaxDim, at::max)
EMULATOR_ARG_EXTREMUM(aclnnMinDim, at::min)
