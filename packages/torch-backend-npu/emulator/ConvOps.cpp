// The ACL emulator's convolution and pooling operators (aclnnConvolution and
// its backward, aclnnMaxPool2dWithIndices, aclnnAvgPool2d,
// aclnnAdaptiveAvgPool2d and their backwards), on ATen's CPU kernels.
#include "Operators.h"

// ---- convolution and pooling
// ------------------------------------------------- Outputs must be contiguous
// (NCHW), as aclnn's are; inputs may be strided.
namespace {

bool contiguous_outputs(std::initializer_list<const at::Tensor*> outputs) {
  for (const at::Tensor* out : outputs) {
    if (out->defined() && !out->is_contiguous()) {
      return false;
    }
  }
  return true;
}

}  // namespace

EMULATOR_OP aclnnStatus aclnnConvolutionGetWorkspaceSize(
    const aclTensor* input, const aclTensor* weight, const aclTensor* bias,
    const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool transposed,
    const aclIntArray* outputPadding, const int64_t groups, aclTensor* output,
    int8_t cubeMathType, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnConvolution");
  auto x = plan.required(input), w = plan.required(weight),
       b = plan.tensor(bias), o = plan.required(output);
  auto s = plan.ints(stride), p = plan.ints(padding), d = plan.ints(dilation),
       op = plan.ints(outputPadding);
  if (o.defined() && !contiguous_outputs({&o})) {
    return fail(ACLNN_ERR_PARAM_INVALID,
                "aclnnConvolution: output must be contiguous (NCHW)");
  }
  (void)cubeMathType;
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    o.copy_(at::convolution(x, w, b, s, p, d, transposed, op, groups));
  });
}
EMULATOR_LAUNCH(aclnnConvolution)

EMULATOR_OP aclnnStatus aclnnConvolutionBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input,
    const aclTensor* weight, const aclIntArray* biasSizes,
    const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool transposed,
    const aclIntArray* outputPadding, int groups,
    const aclBoolArray* outputMask, int8_t cubeMathType, aclTensor* gradInput,
    aclTensor* gradWeight, aclTensor* gradBias, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  Plan plan("aclnnConvolutionBackward");
  auto g = plan.required(gradOutput), x = plan.required(input),
       w = plan.required(weight), gx = plan.tensor(gradInput),
       gw = plan.tensor(gradWeight), gb = plan.tensor(gradBias);
  auto bias = plan.ints(biasSizes), s = plan.ints(stride),
       p = plan.ints(padding), d = plan.ints(dilation),
       op = plan.ints(outputPadding);
  std::array<bool, 3> mask = {true, true, true};
  if (outputMask != nullptr && outputMask->values.size() == 3) {
    mask = {outputMask->values[0], outputMask->values[1],
            outputMask->values[2]};
  }
  if ((mask[0] && !gx.defined()) || (mask[1] && !gw.defined()) ||
      (mask[2] && !gb.defined())) {
    return fail(
        ACLNN_ERR_PARAM_NULLPTR,
        "aclnnConvolutionBackward: an output the mask asks for is null");
  }
  if (!contiguous_outputs({&gx, &gw, &gb})) {
    return fail(ACLNN_ERR_PARAM_INVALID,
                "aclnnConvolutionBackward: outputs must be contiguous");
  }
  (void)cubeMathType;
  return plan.finish(workspaceSize, executor, kScratch, [=]() mutable {
    auto [dx, dw, db] = at::convolution_backward(g, x, w, bias, s, p, d,
                                                 transposed, op, groups, mask);
    if (mask[0]) {
      gx.copy_(dx);
    }
    if (mask[1]) {
      gw.copy_(dw);
    }
    if (mask[2]) {
      gb.copy_(db);
    }
  });
}
EMULATOR_LAUNCH(aclnnConvolutionBackward)

EMULATOR_OP aclnnStatus aclnnMaxPool2dWithIndicesGetWorkspaceSize(
    const aclTensor* self, const aclIntArray* kernelSize,
    const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool ceilMode, aclTensor* out,
    aclTensor* indices, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnMaxPool2dWithIndices");
  auto x = plan.required(self), o = plan.required(out),
       i = plan.required(indices);
  auto k = plan.ints(kernelSize), s = plan.ints(stride), p = plan.ints(padding),
       d = plan.ints(dilation);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    auto [values, where] = at::max_pool2d_with_indices(x, k, s, p, d, ceilMode);
    o.copy_(values);
    i.copy_(where);
  });
}
EMULATOR_LAUNCH(aclnnMaxPool2dWithIndices)

EMULATOR_OP aclnnStatus aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self,
    const aclTensor* indices, const aclIntArray* kernelSize,
    const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool ceilMode, aclTensor* gradInput,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnMaxPool2dWithIndicesBackward");
  auto g = plan.required(gradOutput), x = plan.required(self),
       i = plan.required(indices), gx = plan.required(gradInput);
  auto k = plan.ints(kernelSize), s = plan.ints(stride), p = plan.ints(padding),
       d = plan.ints(dilation);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    gx.copy_(at::max_pool2d_with_indices_backward(g, x, k, s, p, d, ceilMode,
                                                  i.to(at::kLong)));
  });
}
EMULATOR_LAUNCH(aclnnMaxPool2dWithIndicesBackward)

EMULATOR_OP aclnnStatus aclnnAvgPool2dGetWorkspaceSize(
    const aclTensor* self, const aclIntArray* kernelSize,
    const aclIntArray* strides, const aclIntArray* paddings, bool ceilMode,
    bool countIncludePad, int64_t divisorOverride, int8_t cubeMathType,
    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnAvgPool2d");
  auto x = plan.required(self), o = plan.required(out);
  auto k = plan.ints(kernelSize), s = plan.ints(strides),
       p = plan.ints(paddings);
  (void)cubeMathType;
  const std::optional<int64_t> divisor =
      divisorOverride == 0 ? std::nullopt
                           : std::optional<int64_t>(divisorOverride);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    o.copy_(at::avg_pool2d(x, k, s, p, ceilMode, countIncludePad, divisor));
  });
}
EMULATOR_LAUNCH(aclnnAvgPool2d)

EMULATOR_OP aclnnStatus aclnnAvgPool2dBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self,
    const aclIntArray* kernelSize, const aclIntArray* stride,
    const aclIntArray* padding, bool ceilMode, bool countIncludePad,
    int64_t divisorOverride, int8_t cubeMathType, aclTensor* gradInput,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnAvgPool2dBackward");
  auto g = plan.required(gradOutput), x = plan.required(self),
       gx = plan.required(gradInput);
  auto k = plan.ints(kernelSize), s = plan.ints(stride), p = plan.ints(padding);
  (void)cubeMathType;
  const std::optional<int64_t> divisor =
      divisorOverride == 0 ? std::nullopt
                           : std::optional<int64_t>(divisorOverride);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    gx.copy_(at::avg_pool2d_backward(g, x, k, s, p, ceilMode, countIncludePad,
                                     divisor));
  });
}
EMULATOR_LAUNCH(aclnnAvgPool2dBackward)

EMULATOR_OP aclnnStatus aclnnAdaptiveAvgPool2dGetWorkspaceSize(
    const aclTensor* self, const aclIntArray* outputSize, aclTensor* out,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnAdaptiveAvgPool2d");
  auto x = plan.required(self), o = plan.required(out);
  auto size = plan.ints(outputSize);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    o.copy_(at::_adaptive_avg_pool2d(x, size));
  });
}
EMULATOR_LAUNCH(aclnnAdaptiveAvgPool2d)

EMULATOR_OP aclnnStatus aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* self, aclTensor* gradInput,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  Plan plan("aclnnAdaptiveAvgPool2dBackward");
  auto g = plan.required(gradOutput), x = plan.required(self),
       gx = plan.required(gradInput);
  return plan.finish(workspaceSize, executor, 0, [=]() mutable {
    gx.copy_(at::_adaptive_avg_pool2d_backward(g, x));
  });
}
EMULATOR_LAUNCH(aclnnAdaptiveAvgPool2dBackward)
