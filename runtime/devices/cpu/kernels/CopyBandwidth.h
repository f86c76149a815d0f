// The memory-bandwidth floor that --profile measures non-GEMM steps against: a STREAM-like copy
// (https://www.cs.virginia.edu/stream/: "Copy", a[i] = b[i], counting the bytes read and written)
// between two buffers larger than any last-level cache, split across the cpu device's threads as
// its steps are.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_COPYBANDWIDTH_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_COPYBANDWIDTH_H

#include <cstdint>

namespace amp::rt::cpu {

// GB/s (1e9 bytes, read + written) of the best of `repeats` copies of `bytes` (2 buffers of it
// are allocated and touched first); 0 if they cannot be allocated.
double measureCopyBandwidth(int64_t bytes = int64_t{128} << 20, int repeats = 5);

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_COPYBANDWIDTH_H
