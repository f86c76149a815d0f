// Fused elementwise regions, formed by amp-fuse (passes/Fuse.cpp) after the training passes: one
// kernel per region, one pass over memory instead of one per op.

def Amp_FusedOp : Amp_Op<"fused", [IsolatedFromAbove]> {
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
