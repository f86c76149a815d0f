// Fused elementwise regions, formed by amp-fuse (passes/Fuse.cpp) after the training passes: one
// kernel per region, one pass over memory instead of one per op.

def Amp_FusedOp : Amp_Op<"fused", [Amp_FusedStep, IsolatedFromAbove]> {
  let summary = "An elementwise region run as one generated kernel";
  let description = [{
    The body is a chain of elementwise ops (unary and binary math, compare, select, cast) over one
    iteration space, the shape of every body result. Inputs either have that shape, are scalars,
    or broadcast along leading dims (a bias [N] against [M, N]). Each body op keeps its own
    precision and rounds to its own result type, so the region computes exactly what the
    unfused ops compute; only memory traffic changes. `kernel` names the generated function in the
    bundle's code object. The region may end with `amp.reduce_sum` ops over all but the last dim
    (a bias gradient: column sums `[N]` of an `[..., N]` body value), which only the yield reads;
    the kernel then runs by columns, every row in order, so each sum keeps the reduction's order.

    ```mlir
    %r = amp.fused "k0" (%x, %b) : (tensor<128x256xbf16>, tensor<256xf32>) -> tensor<128x256xf32> {
    ^bb0(%a: tensor<128x256xbf16>, %c: tensor<256xf32>):
      %0 = amp.cast %a : tensor<128x256xbf16> to tensor<128x256xf32>
      %1 = amp.add %0, %c : tensor<128x256xf32>, tensor<256xf32>
      %2 = amp.relu %1 : tensor<128x256xf32>
      amp.yield %2 : tensor<128x256xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<Amp_AnyTensor>:$inputs);
  let results = (outs Variadic<Amp_AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$kernel `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
}

def Amp_YieldOp : Amp_Op<"yield", [Terminator, HasParent<"FusedOp">]> {
  let summary = "The results of a fused region";
  let description = "Terminates an `amp.fused` body; its operands are the region's results.";
  let arguments = (ins Variadic<Amp_AnyTensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

def Amp_GemmEpilogueOp : Amp_Op<"gemm_epilogue", [Amp_LibraryStep]> {
  let summary = "A GEMM whose result carries a cuBLASLt training epilogue";
  let description = [{
    Formed by amp-select-gemm-epilogues (cuda targets, `ampc --gemm-epilogues=cublaslt`) from an
    `amp.linear` or `amp.matmul` and the elementwise work around it. The product is
    `P = op(lhs) · op(rhs)` as `amp.matmul` computes it (`transpose_a`, `transpose_b`; batch
    dims broadcast; f32 accumulation); what the epilogue adds depends on `kind`. The third operand
    (`epilogue_input`), when there is one, is the kind's input named below. Every kind computes the
    bits of the unfused ops it replaces, which is what the reference executor runs; a cuda device
    runs the op as one cuBLASLt call and is within summation-order bounds of those bits.

    | kind | operands | results | the unfused ops |
    |---|---|---|---|
    | `relu_aux`, `relu_aux_bias` | lhs, rhs[, bias] | d, mask | `d = amp.linear (bias) activation = relu`, `mask = compare gt(d, +0)` |
    | `gelu_aux`, `gelu_aux_bias` | lhs, rhs[, bias] | d, pre | `pre = amp.linear (bias)`, `d = amp.gelu pre approximate = tanh` |
    | `gelu_bias` | lhs, rhs, bias | d | the same, `pre` not kept |
    | `drelu`, `drelu_bgrad` | lhs, rhs, mask | dx[, db] | `dx = select(mask, P, +0)`, `db = reduce_sum dx` over all dims but the last |
    | `dgelu`, `dgelu_bgrad` | lhs, rhs, pre | dx[, db] | `dx = amp.gelu_grad pre, P approximate = tanh`, `db` as above |
    | `bgrad_a` | lhs `[K, M]` transposed, rhs | dw, db `[M]` | `dw = P`, `db = reduce_sum lhs dims = [0]` |
    | `bgrad_b` | lhs, rhs `[K, N]` | dw, db `[N]` | `dw = P`, `db = reduce_sum rhs dims = [0]` |

    The forward kinds are `amp.linear`'s layer: `lhs` is its input `[..., K]` (never transposed),
    `rhs` its weight (`transpose_b` is the linear's `transpose_w`), the bias `[N]` is added in f32
    before the one rounding. The mask is an i1 tensor of `d`'s shape (a cuda device stores
    cuBLASLt's bit mask in its storage, so only a `drelu` kind may read it), the GELU input has
    `d`'s type. Every float operand and result has one element type.

    ```mlir
    %h, %mask = amp.gemm_epilogue relu_aux_bias %x, %w1, %b1 transpose_b
        : tensor<32x784xbf16>, tensor<256x784xbf16>, tensor<256xbf16> -> tensor<32x256xbf16>, tensor<32x256xi1>
    %dx, %db = amp.gemm_epilogue drelu_bgrad %dy, %w2, %mask
        : tensor<32x10xbf16>, tensor<10x256xbf16>, tensor<32x256xi1> -> tensor<32x256xbf16>, tensor<256xbf16>
    ```
  }];
  let arguments = (ins Amp_GemmEpilogueKindAttr:$kind, Amp_FloatTensor:$lhs, Amp_FloatTensor:$rhs,
                       Optional<Amp_AnyTensor>:$epilogue_input, UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Variadic<Amp_AnyTensor>:$results);
  let assemblyFormat = [{
    `` $kind $lhs `,` $rhs (`,` $epilogue_input^)? (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    attr-dict `:` type($lhs) `,` type($rhs) (`,` type($epilogue_input)^)? `->` type($results)
  }];
  let hasVerifier = 1;
}
