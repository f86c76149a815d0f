//===- AmpCollectiveOps.td - communication between data-parallel ranks -----===//
// Included from AmpOps.td. amp-data-parallel inserts these into `@train_step`
// (docs/data-parallel.md); the runtime runs them through MPI (runtime/dist/Communicator.h).

def Amp_AllReduceOp : Op<Amp_Dialect, "all_reduce", [InferTypeOpAdaptor,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Reduces tensors elementwise across the ranks of a data-parallel job";
  let description = [{
    Every rank passes tensors of the same types and receives, for each, the elementwise
    reduction over all ranks; every rank receives bitwise the same values. One op is one
    collective call (a bucket): its tensors, all of one element type, travel together.

    - `sum` and `mean` take f32, f16 and bf16 tensors. `mean` is DistributedDataParallel's: each
      rank divides its values by the world size (f32 arithmetic, rounded to the tensor's type),
      then the quotients are summed; f16 and bf16 sums add in f32 and round once per addition.
    - `max` takes f32, i32 and i64 tensors. A NaN on any rank makes the f32 maximum NaN: the
      op that decides whether every rank skips a step must see a NaN found on one of them.

    In a job of one rank each result equals its operand. The op is not `Pure`: collectives are
    never removed, merged or reordered, so every rank makes the same calls in the same order.

    ```mlir
    %g1r, %g2r = amp.all_reduce mean %g1, %g2 : tensor<784x256xf32>, tensor<256xf32>
    %found = amp.all_reduce max %found_inf : tensor<f32>
    ```
  }];
  let arguments = (ins Amp_ReduceKindAttr:$kind, Variadic<Amp_AnyTensor>:$values);
  let results = (outs Variadic<Amp_AnyTensor>:$reduced);
  let assemblyFormat = "`` $kind $values attr-dict `:` type($values)";
  let hasVerifier = 1;
}
