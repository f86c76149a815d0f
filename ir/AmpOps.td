//===- AmpOps.td - operations of the amp dialect --------------------------===//
#ifndef AMP_OPS_TD
#define AMP_OPS_TD

include "ir/AmpBase.td"
include "ir/AmpAttrs.td"
include "ir/AmpInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Amp_Op<string mnemonic, list<Trait> traits = []>
    : Op<Amp_Dialect, mnemonic, !listconcat([Pure], traits)>;

// The ops a model is written in. Each declares the VJP and autocast interfaces
// (ir/AmpInterfaces.td) and must define them in ir/AmpVjp.cpp and ir/AmpAutocast.cpp, so
// autodiff's and the policies' coverage is checked when the compiler links.
class Amp_ModelOp<string mnemonic, list<Trait> traits = []>
    : Amp_Op<mnemonic, !listconcat(traits, [DeclareOpInterfaceMethods<Amp_DifferentiableOpInterface>,
                                            DeclareOpInterfaceMethods<Amp_AutocastOpInterface>])>;

//===----------------------------------------------------------------------===//
// Constant
//===----------------------------------------------------------------------===//

def Amp_ConstantOp : Amp_ModelOp<"constant", [ConstantLike,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor";
  let description = [{
    Materialises a dense constant. The result type is the attribute's type.

    ```mlir
    %c = amp.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Amp_AnyTensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

class Amp_UnaryOp<string mnemonic, string formula, list<Trait> traits = []>
    : Amp_ModelOp<mnemonic, !listconcat([Elementwise, AllTypesMatch<["input", "result"]>], traits)> {
  let summary = "Elementwise " # mnemonic # ": " # formula;
  let description = !strconcat("Computes `", formula, "` for every element. ",
    "f16/bf16 inputs are computed in f32 and rounded to the result type.\n\n",
    "```mlir\n%y = amp.", mnemonic, " %x : tensor<4x8xf32>\n```");
  let arguments = (ins Amp_FloatTensor:$input);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Amp_NegOp : Amp_UnaryOp<"neg", "-x">;
def Amp_AbsOp : Amp_UnaryOp<"abs", "|x|">;
def Amp_ExpOp : Amp_UnaryOp<"exp", "e^x">;
def Amp_LogOp : Amp_UnaryOp<"log", "ln(x)">;
def Amp_SqrtOp : Amp_UnaryOp<"sqrt", "sqrt(x)">;
def Amp_RsqrtOp : Amp_UnaryOp<"rsqrt", "1/sqrt(x)">;
def Amp_ReciprocalOp : Amp_UnaryOp<"reciprocal", "1/x">;
def Amp_TanhOp : Amp_UnaryOp<"tanh", "tanh(x)">;
def Amp_ErfOp : Amp_UnaryOp<"erf", "erf(x), the error function">;
def Amp_SigmoidOp : Amp_UnaryOp<"sigmoid", "1/(1+e^-x)">;
def Amp_ReluOp : Amp_UnaryOp<"relu", "max(x, 0)">;
def Amp_SiluOp : Amp_UnaryOp<"silu", "x*sigmoid(x)">;

def Amp_GeluOp : Amp_ModelOp<"gelu", [Elementwise, AllTypesMatch<["input", "result"]>]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `approximate = none` (the default) computes `0.5*x*(1+erf(x/sqrt(2)))`; `approximate = tanh`
    computes PyTorch's `0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))`.

    ```mlir
    %y = amp.gelu %x approximate = tanh : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input,
                       DefaultValuedAttr<Amp_GeluApproximationAttr,
                                         "::mlir::amp::GeluApproximation::None">:$approximate);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = "$input (`approximate` `=` `` $approximate^)? attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Elementwise binary with numpy broadcasting
//===----------------------------------------------------------------------===//

class Amp_BinaryOp<string mnemonic, string formula>
    : Amp_ModelOp<mnemonic, [InferTypeOpAdaptor]> {
  let summary = "Elementwise " # mnemonic # " with numpy broadcasting: " # formula;
  let description = !strconcat("Computes `", formula, "` after broadcasting both operands ",
    "to a common shape (numpy rules: align trailing dimensions; a dimension of 1 stretches). ",
    "Both operands have the same element type; the result has it too.\n\n",
    "```mlir\n%z = amp.", mnemonic, " %x, %bias : tensor<4x8xf32>, tensor<8xf32>\n```");
  let arguments = (ins Amp_FloatTensor:$lhs, Amp_FloatTensor:$rhs);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Amp_AddOp : Amp_BinaryOp<"add", "x + y">;
def Amp_SubOp : Amp_BinaryOp<"sub", "x - y">;
def Amp_MulOp : Amp_BinaryOp<"mul", "x * y">;
def Amp_DivOp : Amp_BinaryOp<"div", "x / y">;
def Amp_MaximumOp : Amp_BinaryOp<"maximum", "max(x, y), NaN-propagating">;
def Amp_MinimumOp : Amp_BinaryOp<"minimum", "min(x, y), NaN-propagating">;
def Amp_PowOp : Amp_BinaryOp<"pow", "x ^ y">;

def Amp_CompareOp : Amp_ModelOp<"compare", [InferTypeOpAdaptor]> {
  let summary = "Elementwise comparison with broadcasting, producing an i1 mask";
  let description = [{
    `predicate` is one of `eq`, `ne`, `lt`, `le`, `gt`, `ge`. Comparisons with NaN are false
    except `ne`.

    ```mlir
    %m = amp.compare lt, %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Amp_ComparePredicateAttr:$predicate, Amp_FloatTensor:$lhs,
                       Amp_FloatTensor:$rhs);
  let results = (outs Amp_MaskTensor:$result);
  let assemblyFormat = "`` $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Amp_SelectOp : Amp_ModelOp<"select", [InferTypeOpAdaptor]> {
  let summary = "Elementwise choice by an i1 mask, with broadcasting";
  let description = [{
    `result = cond ? true_value : false_value`, all three broadcast to a common shape. The two
    values have the same element type.

    ```mlir
    %y = amp.select %mask, %x, %neg_inf : tensor<1x8x8xi1>, tensor<4x8x8xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Amp_MaskTensor:$cond, Amp_FloatTensor:$true_value,
                       Amp_FloatTensor:$false_value);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $cond `,` $true_value `,` $false_value attr-dict `:` type($cond) `,` type($true_value) `,`
    type($false_value)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions and windows
//===----------------------------------------------------------------------===//

def Amp_MatmulOp : Amp_ModelOp<"matmul", [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = "Matrix product, 2-D or batched with broadcast batch dimensions";
  let description = [{
    `lhs` is `[..., M, K]` (or `[..., K, M]` with `transpose_a`), `rhs` is `[..., K, N]` (or
    `[..., N, K]` with `transpose_b`); both have rank >= 2 and the same element type. Leading
    (batch) dimensions broadcast numpy-style. The result is `[batch..., M, N]`. Products are
    accumulated in f32.

    ```mlir
    %y = amp.matmul %x, %w : tensor<32x784xf32>, tensor<784x256xf32>
    %s = amp.matmul %q, %k transpose_b : tensor<4x64x16xbf16>, tensor<4x64x16xbf16>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$lhs, Amp_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)? attr-dict `:`
    type($lhs) `,` type($rhs)
  }];
}

def Amp_LinearOp : Amp_ModelOp<"linear", [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = "Fully connected layer: x·Wᵀ + b (PyTorch's F.linear / addmm), bias in the epilogue";
  let description = [{
    `input` is `[..., in]` (rank >= 2), `weight` is `[out, in]` (PyTorch's `nn.Linear` layout,
    `transpose_w = true`, the default) or `[in, out]` (`transpose_w = false`: `x·W`, the layout of
    an `amp.matmul` weight), `bias` (optional) is `[out]`. All float operands have one element
    type, which the result `[..., out]` has too.

    Numerics (the cuBLASLt / oneDNN epilogue contract): each result element is
    `rne_T(acc + f32(b[j]))` where `acc = sum_k x[..., k]·w[k, j]` is accumulated in f32 in
    k order from +0 and the bias is added in f32 *before* the one rounding to the result type
    `T`. So a bf16 linear layer has bf16 activations in and out and rounds once, where
    `amp.matmul` followed by `amp.add` rounds twice (and, under autocast, promotes the add to f32).

    ```mlir
    // nn.Linear(784, 256): weight [out, in].
    %y = amp.linear %x, %w, %b : tensor<128x784xbf16>, tensor<256x784xbf16>, tensor<256xbf16>
    // weight stored [in, out]; no bias; batched input.
    %q = amp.linear %h, %wq transpose_w = false : tensor<8x32x64xf32>, tensor<64x64xf32>
    ```

    `activation = relu` (amp-fuse folds a relu that is the only reader of the result into the
    layer) applies relu to each rounded result element, exactly what a separate `amp.relu` computes
    (NaN propagates, -0 becomes +0); `none` is the default.

    The `#amp.init` fan-in/fan-out of a rank-2 parameter reads it as `[in, out]`
    (docs/model-convention.md); a `[out, in]` weight with a fan-dependent init and in != out gets
    the fans swapped.
  }];
  let arguments = (ins Amp_FloatTensor:$input, Amp_FloatTensor:$weight,
                       Optional<Amp_FloatTensor>:$bias,
                       DefaultValuedAttr<BoolAttr, "true">:$transpose_w,
                       DefaultValuedAttr<Amp_LinearActivationAttr,
                                         "::mlir::amp::LinearActivation::None">:$activation);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`transpose_w` `=` $transpose_w^)? (`activation` `=` `` $activation^)?
    attr-dict `:` type($input) `,` type($weight) (`,` type($bias)^)?
  }];
}

def Amp_Conv2DOp : Amp_ModelOp<"conv2d", [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = "2-D convolution (NCHW) with stride, padding, dilation, groups and optional bias";
  let description = [{
    `input` is `[N, C, H, W]`, `weight` is `[O, C/groups, KH, KW]`, `bias` (optional) is `[O]`.
    Padding is symmetric zero padding. The output is
    `[N, O, (H + 2*ph - dh*(KH-1) - 1)/sh + 1, (W + 2*pw - dw*(KW-1) - 1)/sw + 1]`.

    ```mlir
    %y = amp.conv2d %x, %w, %b {padding = array<i64: 1, 1>}
        : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Amp_FloatTensor:$weight,
                       Optional<Amp_FloatTensor>:$bias,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight)
    (`,` type($bias)^)?
  }];
}

class Amp_Pool2DOp<string mnemonic, string what>
    : Amp_ModelOp<mnemonic, [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = what # " pooling over NCHW windows";
  let description = !strconcat(what, " over `kernel` windows moved by `stride` (default = kernel) ",
    "with symmetric `padding` (max pads with -inf; avg counts padded zeros, as PyTorch's ",
    "count_include_pad=True).\n\n",
    "```mlir\n%y = amp.", mnemonic, " %x kernel = [2, 2] : tensor<8x16x32x32xf32>\n```");
  let arguments = (ins Amp_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       OptionalAttr<DenseI64ArrayAttr>:$stride,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` `=` $kernel (`stride` `=` $stride^)? attr-dict `:` type($input)
  }];
}

def Amp_MaxPool2DOp : Amp_Pool2DOp<"max_pool2d", "Max">;
def Amp_AvgPool2DOp : Amp_Pool2DOp<"avg_pool2d", "Average">;

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

class Amp_ReduceOp<string mnemonic, string what>
    : Amp_ModelOp<mnemonic, [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = what # " over the given dimensions";
  let description = !strconcat(what, " over `dims` (distinct, in range), accumulated in f32. ",
    "With `keepdim` the reduced dimensions stay with size 1.\n\n",
    "```mlir\n%s = amp.", mnemonic, " %x dims = [1] keepdim : tensor<4x8xf32>\n```");
  let arguments = (ins Amp_FloatTensor:$input, DenseI64ArrayAttr:$dims, UnitAttr:$keepdim);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = "$input `dims` `=` $dims (`keepdim` $keepdim^)? attr-dict `:` type($input)";
}

def Amp_ReduceSumOp : Amp_ReduceOp<"reduce_sum", "Sum">;
def Amp_ReduceMeanOp : Amp_ReduceOp<"reduce_mean", "Mean">;
def Amp_ReduceMaxOp : Amp_ReduceOp<"reduce_max", "Maximum">;

class Amp_SoftmaxLikeOp<string mnemonic, string formula>
    : Amp_ModelOp<mnemonic, [Amp_LibraryStep, AllTypesMatch<["input", "result"]>]> {
  let summary = formula # " along one axis";
  let description = !strconcat("Computes `", formula, "` along `axis`, numerically stable ",
    "(the row maximum is subtracted first).\n\n",
    "```mlir\n%p = amp.", mnemonic, " %x axis = 1 : tensor<4x10xf32>\n```");
  let arguments = (ins Amp_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Amp_SoftmaxOp : Amp_SoftmaxLikeOp<"softmax", "exp(x_i) / sum_j exp(x_j)">;
def Amp_LogSoftmaxOp : Amp_SoftmaxLikeOp<"log_softmax", "x_i - log(sum_j exp(x_j))">;

def Amp_LayerNormOp : Amp_ModelOp<"layer_norm", [Amp_LibraryStep, AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Layer normalisation over the trailing dimensions";
  let description = [{
    Normalises over the last `normalized_ndim` dimensions (default 1) with the biased variance:
    `y = (x - mean) / sqrt(var + eps) * weight + bias`. `weight` and `bias` are optional and have
    the normalised (trailing) shape and the input's element type.

    ```mlir
    %y = amp.layer_norm %x weight(%g : tensor<64xf32>) bias(%b : tensor<64xf32>)
        : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Optional<Amp_FloatTensor>:$weight,
                       Optional<Amp_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_ndim,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `:` type($weight) `)`)? (`bias` `(` $bias^ `:` type($bias) `)`)?
    attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Amp_BatchNormOp : Amp_ModelOp<"batch_norm", [Amp_LibraryStep, InferTypeOpAdaptor,
    AllTypesMatch<["scale", "bias", "running_mean", "running_var"]>]> {
  let summary = "Batch normalisation over every dimension but the channels (dim 1)";
  let description = [{
    `input` is `[N, C, ...]` (`[N, C]`, `[N, C, L]`, `[N, C, H, W]`, ...); `scale`, `bias`, `running_mean` and `running_var` are
    f32 `[C]` whatever the input's type (as PyTorch and cuDNN keep them). Per channel,
    `y = (x - mean) * invstd * scale + bias`, `invstd = 1 / sqrt(var + epsilon)`, computed in f32
    and rounded once to the input's type.

    With `training`, `mean` and `var` are the batch statistics (biased variance, f32) and the
    new running statistics are `(1 - momentum) * running + momentum * batch`, the variance term
    *unbiased* (`var * M / (M - 1)`, M = N times the trailing dims, the elements per channel), as PyTorch updates them. Without it,
    `mean` and `var` are the running statistics and the new running statistics are the old ones.

    ```mlir
    %y, %mean, %var = amp.batch_norm %x, %gamma, %beta running(%rm, %rv) training
        : tensor<8x16x32x32xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Amp_FloatTensor:$scale, Amp_FloatTensor:$bias,
                       Amp_FloatTensor:$running_mean, Amp_FloatTensor:$running_var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.1">:$momentum, UnitAttr:$training);
  let results = (outs Amp_FloatTensor:$result, Amp_FloatTensor:$new_running_mean,
                      Amp_FloatTensor:$new_running_var);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `running` `(` $running_mean `,` $running_var `)`
    (`training` $training^)? attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Amp_RmsNormOp : Amp_ModelOp<"rms_norm", [Amp_LibraryStep, AllTypesMatch<["input", "result"]>]> {
  let summary = "Root-mean-square normalisation over the trailing dimensions";
  let description = [{
    `y = x / sqrt(mean(x^2) + eps) * weight` over the last `normalized_ndim` dimensions.

    ```mlir
    %y = amp.rms_norm %x weight(%g : tensor<64xf32>) : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Optional<Amp_FloatTensor>:$weight,
                       DefaultValuedAttr<I64Attr, "1">:$normalized_ndim,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `:` type($weight) `)`)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Embedding and dropout
//===----------------------------------------------------------------------===//

def Amp_EmbeddingOp : Amp_ModelOp<"embedding", [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = "Gathers rows of a table by integer ids";
  let description = [{
    `table` is `[V, D]`, `ids` is any integer tensor of shape `S`; the result is `S + [D]`.
    An id outside `[0, V)` is a run-time error.

    ```mlir
    %e = amp.embedding %table[%ids] : tensor<256x64xf32>, tensor<8x32xi64>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$table, Amp_IdTensor:$ids);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = "$table `[` $ids `]` attr-dict `:` type($table) `,` type($ids)";
}

def Amp_DropoutOp : Amp_ModelOp<"dropout", [Amp_LibraryStep, AllTypesMatch<["input", "result"]>]> {
  let summary = "Inverted dropout with a counter-based, reproducible mask";
  let description = [{
    Keeps each element with probability `1 - rate` and scales kept elements by `1/(1-rate)`.
    The mask is drawn from Philox4x32-10 keyed by (`seed`, training step, element index), so
    every backend draws the same mask (docs/reference-executor.md gives the exact keying).

    ```mlir
    %y = amp.dropout %x rate = 1.000000e-01 seed = 7 : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, F64Attr:$rate, I64Attr:$seed);
  let results = (outs Amp_FloatTensor:$result);
  let assemblyFormat = "$input `rate` `=` $rate `seed` `=` $seed attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Amp_ReshapeOp : Amp_ModelOp<"reshape", [Amp_AliasStep]> {
  let summary = "Reinterprets a tensor with a new shape of the same element count";
  let description = [{
    ```mlir
    %y = amp.reshape %x : tensor<8x1x28x28xf32> -> tensor<8x784xf32>
    ```
  }];
  let arguments = (ins Amp_AnyTensor:$input);
  let results = (outs Amp_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Amp_TransposeOp : Amp_ModelOp<"transpose", [InferTypeOpAdaptor]> {
  let summary = "Permutes dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    ```mlir
    %y = amp.transpose %x permutation = [0, 2, 1, 3] : tensor<8x16x4x32xf32>
    ```
  }];
  let arguments = (ins Amp_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Amp_AnyTensor:$result);
  let assemblyFormat = "$input `permutation` `=` $permutation attr-dict `:` type($input)";
}

def Amp_BroadcastToOp : Amp_ModelOp<"broadcast_to"> {
  let summary = "Broadcasts a tensor to a larger shape (numpy rules)";
  let description = [{
    ```mlir
    %y = amp.broadcast_to %b : tensor<64xf32> -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Amp_AnyTensor:$input);
  let results = (outs Amp_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Amp_SliceOp : Amp_ModelOp<"slice", [InferTypeOpAdaptor]> {
  let summary = "Strided slice with static bounds";
  let description = [{
    For each dimension `d`, takes indices `starts[d], starts[d]+strides[d], ...` below
    `limits[d]` (`0 <= starts <= limits <= size`, strides >= 1, default 1).

    ```mlir
    %y = amp.slice %x starts = [0, 2] limits = [4, 8] : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Amp_AnyTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs Amp_AnyTensor:$result);
  let assemblyFormat = [{
    $input `starts` `=` $starts `limits` `=` $limits (`strides` `=` $strides^)? attr-dict `:`
    type($input)
  }];
}

def Amp_ConcatOp : Amp_ModelOp<"concat", [InferTypeOpAdaptor]> {
  let summary = "Concatenates tensors along an axis";
  let description = [{
    All inputs have the same element type, rank and sizes except along `axis`.

    ```mlir
    %y = amp.concat %a, %b axis = 1 : tensor<4x8xf32>, tensor<4x2xf32>
    ```
  }];
  let arguments = (ins Variadic<Amp_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Amp_AnyTensor:$result);
  let assemblyFormat = "$inputs `axis` `=` $axis attr-dict `:` type($inputs)";
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Amp_CrossEntropyOp : Amp_ModelOp<"cross_entropy", [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = "Softmax cross-entropy with integer labels, mean reduction";
  let description = [{
    `logits` is `[N, C]`, `labels` is `[N]` of i32/i64. Per sample,
    `loss_i = (1-s) * -log p[i, y_i] + s * mean_c(-log p[i, c])` with `s = label_smoothing`
    and `p = softmax(logits)`; the result is the mean over samples whose label is not
    `ignore_index` (PyTorch's `F.cross_entropy`). The result is a rank-0 tensor of the logits'
    element type.

    ```mlir
    %loss = amp.cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xi64>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$logits, Amp_IdTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                       DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Amp_LossTensor:$result);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` type($logits) `,` type($labels)";
}

def Amp_MseLossOp : Amp_ModelOp<"mse_loss", [Amp_LibraryStep, InferTypeOpAdaptor]> {
  let summary = "Mean squared error, mean reduction";
  let description = [{
    `mean((input - target)^2)` over all elements; both operands have the same type.

    ```mlir
    %loss = amp.mse_loss %pred, %target : tensor<32x4xf32>, tensor<32x4xf32>
    ```
  }];
  let arguments = (ins Amp_FloatTensor:$input, Amp_FloatTensor:$target);
  let results = (outs Amp_LossTensor:$result);
  let assemblyFormat = "$input `,` $target attr-dict `:` type($input) `,` type($target)";
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

def Amp_CastOp : Amp_ModelOp<"cast"> {
  let summary = "Converts between floating-point element types";
  let description = [{
    Rounds each element to the result element type with round-to-nearest-even; f16 overflow
    gives inf. Shapes must match. FP8 types (f8E4M3FN, f8E5M2) are accepted here only.

    ```mlir
    %h = amp.cast %x : tensor<32x784xf32> to tensor<32x784xbf16>
    ```
  }];
  let arguments = (ins Amp_CastableTensor:$input);
  let results = (outs Amp_CastableTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

// Ops the training passes insert: gradients (amp-autodiff) and the scaler/optimizer steps
// (amp-loss-scaling, amp-optimizer).
include "ir/AmpGradOps.td"
include "ir/AmpTrainOps.td"
include "ir/AmpCollectiveOps.td"
include "ir/AmpFusedOps.td"

#endif // AMP_OPS_TD
