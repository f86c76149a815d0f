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

// ZeRO stage 1 (amp-data-parallel with shard-world-size = N, docs/data-parallel.md): every
// tensor is split, row-major and zero-padded at the end, into N equal chunks of
// ceil(numel / N) elements; rank r owns chunk r.

def Amp_ReduceScatterOp : Op<Amp_Dialect, "reduce_scatter", [InferTypeOpAdaptor,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Reduces tensors across ranks and leaves each rank its own chunk of the result";
  let description = [{
    For each operand of `numel` elements, rank r receives the 1-D chunk r (ceil(numel / ranks)
    elements, the last one padded with zeros) of the elementwise reduction over all ranks. `sum`
    and `mean` are those of amp.all_reduce and take f32, f16 and bf16 tensors. One op is one
    collective; `ranks` is the world size the step was compiled for, and a job of another size
    refuses the step.

    ```mlir
    %c1, %c2 = amp.reduce_scatter mean ranks(2) %g1, %g2 : tensor<784x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Amp_ReduceKindAttr:$kind, Amp_BoundedAttr<I64Attr, "1", "">:$ranks,
                       Variadic<Amp_AnyTensor>:$values);
  let results = (outs Variadic<Amp_AnyTensor>:$chunks);
  let assemblyFormat = "`` $kind `ranks` `(` $ranks `)` $values attr-dict `:` type($values)";
  let hasVerifier = 1;
}

def Amp_AllGatherOp : Op<Amp_Dialect, "all_gather", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Concatenates every rank's chunk of each tensor into the whole tensor";
  let description = [{
    The inverse of the chunking of amp.reduce_scatter: each operand is this rank's 1-D chunk
    (ceil(numel / ranks) elements) of the result; every rank receives the chunks of all ranks in
    rank order, without the padding, reshaped to the result's type. Every rank receives bitwise
    the same results. One op is one collective.

    ```mlir
    %w, %b = amp.all_gather ranks(2) %cw, %cb : tensor<100352xf32>, tensor<128xf32>
               -> tensor<784x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Amp_BoundedAttr<I64Attr, "1", "">:$ranks, Variadic<Amp_AnyTensor>:$values);
  let results = (outs Variadic<Amp_AnyTensor>:$gathered);
  let assemblyFormat = "`ranks` `(` $ranks `)` $values attr-dict `:` type($values) `->` type($gathered)";
  let hasVerifier = 1;
}

def Amp_RankChunkOp : Op<Amp_Dialect, "rank_chunk", [Pure, InferTypeOpAdaptor]> {
  let summary = "This rank's chunk of a tensor every rank holds whole";
  let description = [{
    Chunk r of the operand on rank r, chunked as by amp.reduce_scatter: ceil(numel / ranks)
    elements, zero-padded. No communication. ZeRO-1 reads a rank's slice of a master weight
    with it.

    ```mlir
    %mine = amp.rank_chunk ranks(2) %w : tensor<784x256xf32>
    ```
  }];
  let arguments = (ins Amp_BoundedAttr<I64Attr, "1", "">:$ranks, Amp_AnyTensor:$value);
  let results = (outs Amp_AnyTensor:$chunk);
  let assemblyFormat = "`ranks` `(` $ranks `)` $value attr-dict `:` type($value)";
}
