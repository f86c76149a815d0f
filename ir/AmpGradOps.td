//===- AmpGradOps.td - gradient ops inserted by amp-autodiff --------------===//
// Included from AmpOps.td (Amp_Op and the type constraints are defined there).
//
// Each op computes the vector-Jacobian product of one forward op where that product is not
// expressible exactly and clearly with the forward ops (ir/AmpVjp.cpp builds every other
// VJP from forward ops). Operands named `grad` are the cotangent of the forward op's result.
// The numeric contract is the forward ops': f16/bf16 operands are widened to f32, sums accumulate
// in f32 in the order docs/reference-executor.md ("Gradient ops") documents, and each result
// element is rounded once to the result type (RNE).

#ifndef AMP_GRAD_OPS_TD
#define AMP_GRAD_OPS_TD

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def Amp_GeluGradOp : Amp_Op<"gelu_grad", [Elementwise,
    AllTypesMatch<["input", "grad", "result"]>]> {
  let summary = "Gradient of amp.gelu: grad * gelu'(input)";
  let description = [{
    `approximate = none` (the default): `gelu'(x) = Phi(x) + x * phi(x)` (standard normal cdf
    and pdf); `approximate = tanh`: the derivative of PyTorch's tanh approximation,
    `0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)` with
    `t = tanh(sqrt(2/pi) (x + 0.044715 x^3))`. Evaluated in f64 from the f32-widened operands
    and rounded once.

    ```mlir
    %dx = amp.gelu_grad %x, %dy approximate = tanh : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Amp_FloatTensor:$grad,
                       DefaultValuedAttr<Amp_GeluApproximationAttr,
                                         "::mlir::amp::GeluApproximation::None">:$approximate);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad (`approximate` `=` `` $approximate^)? attr-dict `:` type($input)
  }];
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

// Also a model op: a transposed convolution (PyTorch's conv_transpose2d, ONNX ConvTranspose) is
// exactly this product, so models are written in it too and it has a VJP and a precision rule.
def Amp_Conv2DGradInputOp : Amp_ModelOp<"conv2d_grad_input", [Amp_LibraryStep]> {
  let summary = "Gradient of amp.conv2d with respect to its input; a transposed convolution";
  let description = [{
    `grad` is the cotangent `[N, O, OH, OW]` of `amp.conv2d(input, weight)` and `weight` is
    `[O, C/groups, KH, KW]`; the result has the forward input's type `[N, C, H, W]`, written
    explicitly (H and W are not recoverable from OH, OW when the stride does not divide).
    `result[n, g*C/groups + ci, ih, iw] = sum over (o in group g, kh, kw) of
    grad[n, o, oh, ow] * weight[o, ci, kh, kw]` for every `(oh, ow)` with
    `oh*sh - ph + kh*dh = ih` and `ow*sw - pw + kw*dw = iw`. The attributes are the forward
    op's.

    ```mlir
    %dx = amp.conv2d_grad_input %dy, %w {padding = array<i64: 1, 1>}
        : tensor<8x16x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$grad, Amp_FloatTensor:$weight,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` type($grad) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Amp_Conv2DGradWeightOp : Amp_Op<"conv2d_grad_weight", [Amp_LibraryStep]> {
  let summary = "Gradient of amp.conv2d with respect to its weight";
  let description = [{
    `input` is the forward input `[N, C, H, W]`, `grad` the cotangent `[N, O, OH, OW]`; the
    result has the weight's type `[O, C/groups, KH, KW]` (written explicitly).
    `result[o, ci, kh, kw] = sum over (n, oh, ow) of grad[n, o, oh, ow] * xpad[n, g*C/groups + ci,
    oh*sh - ph + kh*dh, ow*sw - pw + kw*dw]` where `xpad` is zero in the padding.

    ```mlir
    %dw = amp.conv2d_grad_weight %x, %dy {padding = array<i64: 1, 1>}
        : tensor<8x3x32x32xf32>, tensor<8x16x32x32xf32> -> tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Amp_FloatTensor:$grad,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` type($input) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Amp_MaxPool2DGradOp : Amp_Op<"max_pool2d_grad", [Amp_LibraryStep, AllTypesMatch<["input", "result"]>]> {
  let summary = "Gradient of amp.max_pool2d: each window's gradient goes to its first maximum";
  let description = [{
    `input` is the forward input, `grad` the cotangent of the pooled result. For every window
    (scanned row-major, as the forward op does) the whole `grad` element is added to the input
    position of the window's *first* maximum (PyTorch's semantics for ties); overlapping
    windows accumulate in f32, windows in row-major output order. `stride` is explicit.

    ```mlir
    %dx = amp.max_pool2d_grad %x, %dy kernel = [2, 2] stride = [2, 2]
        : tensor<8x16x32x32xf32>, tensor<8x16x16x16xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Amp_FloatTensor:$grad,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$stride,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `kernel` `=` $kernel `stride` `=` $stride attr-dict `:` type($input) `,`
    type($grad)
  }];
  let hasVerifier = 1;
}

def Amp_AvgPool2DGradOp : Amp_Op<"avg_pool2d_grad", [Amp_LibraryStep]> {
  let summary = "Gradient of amp.avg_pool2d: each window spreads grad / (kh*kw) over its inputs";
  let description = [{
    `grad` is the cotangent of the pooled result; the result has the forward input's type
    (written explicitly). Every in-bounds position of a window receives
    `grad / (kernel_h * kernel_w)` (count_include_pad = True, as the forward op); overlapping
    windows accumulate in f32 in row-major output order.

    ```mlir
    %dx = amp.avg_pool2d_grad %dy kernel = [2, 2] stride = [2, 2]
        : tensor<8x16x16x16xf32> -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$grad, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$stride,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `kernel` `=` $kernel `stride` `=` $stride attr-dict `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalisations
//===----------------------------------------------------------------------===//

def Amp_SoftmaxGradOp : Amp_Op<"softmax_grad", [Amp_LibraryStep, AllTypesMatch<["output", "result"]>]> {
  let summary = "Gradient of amp.softmax from its output: output * (grad - sum(grad * output))";
  let description = [{
    `output` is amp.softmax's result `y` and `grad` its cotangent `dy`, both of `y`'s shape; the
    sum runs along `axis` (the forward op's). Per slice along `axis`, in element order:
    `p_j = T(dy_j * y_j)`, `s = T(sum_j p_j)` (accumulated in f32 from +0, as amp.reduce_sum),
    `result_j = T(y_j * T(dy_j - s))` with `T` the rounding to `y`'s element type: bit for bit the
    amp.mul, amp.reduce_sum (keepdim), amp.sub and amp.mul it replaces, without their
    intermediates. `grad` may have a narrower float type than `output` when every one of its
    values is exactly one of `output`'s (bf16 or f16 under an f32 softmax): it is widened exactly,
    so a cast of the cotangent need not be materialised.

    ```mlir
    %dx = amp.softmax_grad %y, %dy axis = 2 : tensor<4x8x8xf32>, tensor<4x8x8xbf16>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$output, Amp_FloatTensor:$grad, I64Attr:$axis);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = "$output `,` $grad `axis` `=` $axis attr-dict `:` type($output) `,` type($grad)";
  let hasVerifier = 1;
}

def Amp_LayerNormGradOp : Amp_Op<"layer_norm_grad", [Amp_LibraryStep, InferTypeOpAdaptor,
    AllTypesMatch<["input", "grad"]>]> {
  let summary = "Gradient of amp.layer_norm: (d input, d weight, d bias)";
  let description = [{
    Recomputes the forward statistics (`mean`, `rstd` exactly as amp.layer_norm does) and, per
    normalised group with `xhat = (x - mean) * rstd` and `g = grad * weight` (`g = grad` without
    weight): `dx = rstd * (g - mean(g) - xhat * mean(g * xhat))`. `d weight = sum over groups of
    grad * xhat` and `d bias = sum over groups of grad` have the normalised (trailing) shape and
    are produced whether or not the forward op had a weight or bias (unused results are dead).

    ```mlir
    %dx, %dw, %db = amp.layer_norm_grad %x, %dy weight(%g : tensor<64xf32>)
        : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Optional<Amp_FloatTensor>:$weight,
                       Amp_FloatTensor:$grad,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_ndim,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs Amp_FloatTensor:$input_grad, Amp_FloatTensor:$weight_grad,
                      Amp_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $grad (`weight` `(` $weight^ `:` type($weight) `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Amp_BatchNormGradOp : Amp_Op<"batch_norm_grad", [Amp_LibraryStep, InferTypeOpAdaptor,
    AllTypesMatch<["input", "grad"]>, AllTypesMatch<["scale", "running_mean", "running_var"]>]> {
  let summary = "Gradient of amp.batch_norm: (d input, d scale, d bias)";
  let description = [{
    Per channel over its M elements, with `mean` and `invstd` recomputed exactly as amp.batch_norm
    computes them (the batch statistics with `training`, else the running ones),
    `xhat = (x - mean) * invstd`, `d bias = sum(grad)`, `d scale = sum(grad * xhat)` (f32 `[C]`)
    and, with `training`,
    `dx = (scale * invstd) * (grad - d bias / M - xhat * (d scale / M))`; without it
    `dx = (scale * invstd) * grad` (the statistics are constants). `dx` has the input's type.

    ```mlir
    %dx, %dscale, %dbias = amp.batch_norm_grad %x, %dy, %gamma running(%rm, %rv) training
        : tensor<8x16x32x32xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Amp_FloatTensor:$grad, Amp_FloatTensor:$scale,
                       Amp_FloatTensor:$running_mean, Amp_FloatTensor:$running_var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon, UnitAttr:$training);
  let results = (outs Amp_FloatTensor:$input_grad, Amp_FloatTensor:$scale_grad,
                      Amp_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $grad `,` $scale `running` `(` $running_mean `,` $running_var `)`
    (`training` $training^)? attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Amp_RmsNormGradOp : Amp_Op<"rms_norm_grad", [Amp_LibraryStep, InferTypeOpAdaptor,
    AllTypesMatch<["input", "grad"]>]> {
  let summary = "Gradient of amp.rms_norm: (d input, d weight)";
  let description = [{
    With `rstd` recomputed as amp.rms_norm does, `xhat = x * rstd` and `g = grad * weight`
    (`g = grad` without weight): `dx = rstd * (g - xhat * mean(g * xhat))`;
    `d weight = sum over groups of grad * xhat` (normalised shape, always produced).

    ```mlir
    %dx, %dw = amp.rms_norm_grad %x, %dy weight(%g : tensor<64xf32>) : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Optional<Amp_FloatTensor>:$weight,
                       Amp_FloatTensor:$grad,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_ndim,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Amp_FloatTensor:$input_grad, Amp_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $grad (`weight` `(` $weight^ `:` type($weight) `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Embedding, loss, slice
//===----------------------------------------------------------------------===//

def Amp_EmbeddingGradOp : Amp_Op<"embedding_grad", [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = "Gradient of amp.embedding: scatter-add of the rows of grad into the table";
  let description = [{
    `ids` is the forward op's id tensor of shape `S`, `grad` the cotangent `S + [D]`; the result
    is `[num_embeddings, D]` of grad's element type. Rows are added into an f32 accumulator in
    row-major order of `ids` and rounded once at the end (repeated ids accumulate exactly as a
    sequential f32 sum). An id outside `[0, num_embeddings)` is a run-time error.

    ```mlir
    %dtable = amp.embedding_grad %ids, %dy num_embeddings = 256
        : tensor<8x32xi64>, tensor<8x32x64xf32>
    ```
  }];
  let arguments = (ins Amp_IdTensor:$ids, Amp_FloatTensor:$grad, I64Attr:$num_embeddings);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $grad `num_embeddings` `=` $num_embeddings attr-dict `:` type($ids) `,` type($grad)
  }];
}

def Amp_CrossEntropyGradOp : Amp_Op<"cross_entropy_grad", [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = "Gradient of amp.cross_entropy with respect to the logits";
  let description = [{
    `grad` is the rank-0 cotangent of the loss. For a row whose label `y` is not `ignore_index`,
    `result[i, c] = (grad / count) * (softmax(logits)[i, c] - ((1 - s) * [c == y] + s / C))`
    with `s = label_smoothing` and `count` the number of non-ignored rows; ignored rows get 0.
    The softmax is recomputed exactly as the forward op computes it.

    ```mlir
    %dlogits = amp.cross_entropy_grad %logits, %labels, %dloss
        : tensor<32x10xf32>, tensor<32xi64>, tensor<f32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$logits, Amp_IdTensor:$labels, Amp_LossTensor:$grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad attr-dict `:` type($logits) `,` type($labels) `,` type($grad)
  }];
}

def Amp_SliceGradOp : Amp_Op<"slice_grad"> {
  let summary = "Gradient of amp.slice: grad placed at the sliced positions, zeros elsewhere";
  let description = [{
    The result has the forward input's type (written explicitly); `starts`, `limits` and
    `strides` are the forward op's (strides explicit). Element `starts + i * strides` of the
    result is element `i` of `grad` (a bit copy), every other element is `+0`.

    ```mlir
    %dx = amp.slice_grad %dy starts = [0, 2] limits = [4, 8] strides = [1, 1]
        : tensor<4x6xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$grad, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `starts` `=` $starts `limits` `=` $limits `strides` `=` $strides attr-dict `:`
    type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // AMP_GRAD_OPS_TD
