// amp.reduce_sum, amp.reduce_mean and amp.reduce_max on the CUDA device, with the reference's
// numbers: one thread per output element, its reduced elements visited in row-major order and
// summed in f32 in the contract's blocked pairwise order (SumOrder.h; sum, mean) or taken from
// -inf in order (max, where a NaN propagates and sticks), the mean
// divided once by the count, the result rounded once to the output's type. A column sum (a bias
// gradient) has neighbouring threads on neighbouring columns, so its loads are coalesced.
//   amp_reduce_<op>_<T>(const void* in, void* out, AmpReduceShape shape)
//   op: sum, mean, max; T: f32, bf16, f16 (input and output); grid-stride over shape.outputs,
//   block 256, no shared memory. ampc appends this file, after ReduceArgs.h, to every cuda bundle's
//   kernels (codegen/emit/CudaFlavour.cpp).


template <int Op, int T>
__device__ void amp_reduce(const void* in, void* out, const AmpReduceShape& s) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < s.outputs; o += stride) {
    long long rem = o, base = 0;
    for (int d = s.keptDims - 1; d >= 0; --d) {
      base += rem % s.keptSize[d] * s.keptStride[d];
      rem /= s.keptSize[d];
    }
    float acc = Op == 2 ? __int_as_float(0xff800000) : 0.0f;  // -inf
    AmpSumTree<float> tree;  // a sum's finished blocks
    tree.reset();
    long long coord[AMP_REDUCE_MAX_DIMS] = {0};
    long long offset = base;
    for (long long k = 0; k < s.reducedCount; ++k) {
      const float x = amp_load<T>(in, offset);
      if (Op == 2) {
        if (x > acc || isnan(x)) acc = x;
      } else {
        acc += x;
        if ((k + 1) % AMP_SUM_BLOCK == 0 || k + 1 == s.reducedCount) {
          tree.push(acc);
          acc = 0.0f;
        }
      }
      // The next reduced element in row-major order: an odometer over the reduced dims.
      for (int d = s.reducedDims - 1; d >= 0; --d) {
        offset += s.reducedStride[d];
        if (++coord[d] < s.reducedSize[d]) break;
        offset -= s.reducedSize[d] * s.reducedStride[d];
        coord[d] = 0;
      }
    }
    if (Op != 2) acc = tree.result(0.0f);
    if (Op == 1) acc = acc / (float)s.reducedCount;
    amp_store<T>(out, o, acc);
  }
}

#define AMP_REDUCE(opname, Op, tname, T)                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                     \
      amp_reduce_##opname##_##tname(const void* in, void* out, AmpReduceShape shape) {                  \
    amp_reduce<Op, T>(in, out, shape);                                                                  \
  }
#define AMP_REDUCE_TYPES(opname, Op) AMP_REDUCE(opname, Op, f32, 0) AMP_REDUCE(opname, Op, bf16, 1) AMP_REDUCE(opname, Op, f16, 2)
AMP_REDUCE_TYPES(sum, 0)
AMP_REDUCE_TYPES(mean, 1)
AMP_REDUCE_TYPES(max, 2)
