// The arithmetic of allReduce, shared by every Communicator: which dtype/op pairs are allowed,
// Mean's pre-division, and the element-wise combine rules the MPI user-defined operations
// apply (kept here, free of MPI, so single-process tests pin them down bit by bit).
#ifndef AMP_RUNTIME_DIST_REDUCERULES_H
#define AMP_RUNTIME_DIST_REDUCERULES_H

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/DType.h"
#include "runtime/dist/Communicator.h"

namespace amp::rt {

// InvalidArgument for count < 0, a null buffer with count > 0, or a dtype/op pair the contract
// does not define (Sum/Mean: f32, f16, bf16; Max: f32, i32, i64).
absl::Status checkAllReduceArgs(const void* data, int64_t count, DType dtype, ReduceOp op);

// The same for reduceScatter: Sum or Mean only, a non-null `out` for chunkCount > 0.
absl::Status checkReduceScatterArgs(const void* data, int64_t chunkCount, DType dtype, ReduceOp op, const void* out);

// The same for broadcast: bytes >= 0, a non-null buffer for bytes > 0, root in [0, worldSize).
absl::Status checkBroadcastArgs(const void* data, int64_t bytes, int root, int worldSize);

// Mean's first half (DistributedDataParallel's pre-division): every element becomes
// x / worldSize computed in f32 and rounded once to `dtype` (f32, f16 or bf16). With one rank
// the buffer is left untouched, so even signalling NaNs keep their bits.
void divideForMean(void* data, int64_t count, DType dtype, int worldSize);

// inout[i] = combine(in[i], inout[i]). f16/bf16 sums widen both operands to f32 (exactly), add
// once in f32 and round the sum to nearest even. The f32 maximum is a total order, so it is
// commutative and associative bit for bit: any NaN beats every number (between two NaNs the
// larger bit pattern wins), +0 beats -0, +inf and -inf order as usual.
void sumF16Into(const uint16_t* in, uint16_t* inout, int64_t count);
void sumBF16Into(const uint16_t* in, uint16_t* inout, int64_t count);
float maxF32(float a, float b);
void maxF32Into(const float* in, float* inout, int64_t count);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DIST_REDUCERULES_H
