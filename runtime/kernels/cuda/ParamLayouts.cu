// The layout of every struct the library kernels take by value, as the device compiler lays it
// out, recorded in the code object itself so that a checker of launches (the dry run,
// runtime/devices/cuda/DryRunApi.h) can follow the device pointers inside those structs without
// a copy of the headers of its own. ampc appends this file to the library kernels; it emits, per
// struct, two globals that the PTX carries with their initial values:
//   amp_layout_<Tag>        {sizeof, alignof, fields, then per pointer field:
//                            offset, rows, columns, bytes one pointee has (1: void)}
//   amp_layout_<Tag>_names  "<struct>;<field>;<field>..."
// A pointer field may be an array of up to two dimensions (AmpTensorList's ptr[Depth][capacity]).
// A kernel parameter is matched to its struct by size, so every recorded size must be unique; a
// struct without pointers is recorded too, so that a by-value parameter nothing describes is a
// parameter a checker knows it cannot follow.
#ifndef AMP_RUNTIME_KERNELS_CUDA_PARAMLAYOUTS_CU
#define AMP_RUNTIME_KERNELS_CUDA_PARAMLAYOUTS_CU

template <class T>
struct AmpPointee {
  static constexpr long long bytes = sizeof(T);
};
template <>
struct AmpPointee<void> {
  static constexpr long long bytes = 1;
};
template <>
struct AmpPointee<const void> {
  static constexpr long long bytes = 1;
};

// rows x columns pointers to `pointee` bytes each.
template <class T>
struct AmpPointerField;
template <class T>
struct AmpPointerField<T*> {
  static constexpr long long rows = 1, columns = 1, pointee = AmpPointee<T>::bytes;
};
template <class T, int N>
struct AmpPointerField<T* [N]> {
  static constexpr long long rows = 1, columns = N, pointee = AmpPointee<T>::bytes;
};
template <class T, int M, int N>
struct AmpPointerField<T* [M][N]> {
  static constexpr long long rows = M, columns = N, pointee = AmpPointee<T>::bytes;
};

// NVRTC has no offsetof; this form of it is a constant its front end folds.
#define AMP_LAYOUT_OFFSET(S, f) (long long)((const char*)&(((const S*)0)->f) - (const char*)0)
#define AMP_LAYOUT_FIELD(S, f)                                                                          \
  AMP_LAYOUT_OFFSET(S, f), AmpPointerField<decltype(S::f)>::rows, AmpPointerField<decltype(S::f)>::columns, \
      AmpPointerField<decltype(S::f)>::pointee
#define AMP_LAYOUT_HEAD(S, fields) (long long)sizeof(S), (long long)alignof(S), (long long)(fields)

typedef AmpTensorList<1> AmpTensorList1;
typedef AmpTensorList<2> AmpTensorList2;
typedef AmpTensorList<4> AmpTensorList4;
typedef AmpTensorList<5> AmpTensorList5;

extern "C" __device__ long long amp_layout_AmpTensorList1[] = {AMP_LAYOUT_HEAD(AmpTensorList1, 1),
                                                                     AMP_LAYOUT_FIELD(AmpTensorList1, ptr)};
extern "C" __device__ char amp_layout_AmpTensorList1_names[] = "AmpTensorList<1>;ptr";
extern "C" __device__ long long amp_layout_AmpTensorList2[] = {AMP_LAYOUT_HEAD(AmpTensorList2, 1),
                                                                     AMP_LAYOUT_FIELD(AmpTensorList2, ptr)};
extern "C" __device__ char amp_layout_AmpTensorList2_names[] = "AmpTensorList<2>;ptr";
extern "C" __device__ long long amp_layout_AmpTensorList4[] = {AMP_LAYOUT_HEAD(AmpTensorList4, 1),
                                                                     AMP_LAYOUT_FIELD(AmpTensorList4, ptr)};
extern "C" __device__ char amp_layout_AmpTensorList4_names[] = "AmpTensorList<4>;ptr";
extern "C" __device__ long long amp_layout_AmpTensorList5[] = {AMP_LAYOUT_HEAD(AmpTensorList5, 1),
                                                                     AMP_LAYOUT_FIELD(AmpTensorList5, ptr)};
extern "C" __device__ char amp_layout_AmpTensorList5_names[] = "AmpTensorList<5>;ptr";

extern "C" __device__ long long amp_layout_AmpOptimizerArgs[] = {
    AMP_LAYOUT_HEAD(AmpOptimizerArgs, 6),         AMP_LAYOUT_FIELD(AmpOptimizerArgs, step),
    AMP_LAYOUT_FIELD(AmpOptimizerArgs, lr),       AMP_LAYOUT_FIELD(AmpOptimizerArgs, foundInf),
    AMP_LAYOUT_FIELD(AmpOptimizerArgs, scale),    AMP_LAYOUT_FIELD(AmpOptimizerArgs, norm),
    AMP_LAYOUT_FIELD(AmpOptimizerArgs, out)};
extern "C" __device__ char amp_layout_AmpOptimizerArgs_names[] =
    "AmpOptimizerArgs;step;lr;foundInf;scale;norm;out";

// The shapes hold no pointers.
extern "C" __device__ long long amp_layout_AmpReduceShape[] = {AMP_LAYOUT_HEAD(AmpReduceShape, 0)};
extern "C" __device__ char amp_layout_AmpReduceShape_names[] = "AmpReduceShape";
extern "C" __device__ long long amp_layout_AmpTransposeShape[] = {AMP_LAYOUT_HEAD(AmpTransposeShape, 0)};
extern "C" __device__ char amp_layout_AmpTransposeShape_names[] = "AmpTransposeShape";
extern "C" __device__ long long amp_layout_AmpConvShape[] = {AMP_LAYOUT_HEAD(AmpConvShape, 0)};
extern "C" __device__ char amp_layout_AmpConvShape_names[] = "AmpConvShape";
extern "C" __device__ long long amp_layout_AmpPoolShape[] = {AMP_LAYOUT_HEAD(AmpPoolShape, 0)};
extern "C" __device__ char amp_layout_AmpPoolShape_names[] = "AmpPoolShape";

// A kernel parameter is matched to its layout by size alone.
template <class... S>
struct AmpDistinctSizes;
template <>
struct AmpDistinctSizes<> {
  static constexpr bool value = true;
};
template <class First, class... Rest>
struct AmpDistinctSizes<First, Rest...> {
  static constexpr bool value = ((sizeof(First) != sizeof(Rest)) && ... && true) && AmpDistinctSizes<Rest...>::value;
};
static_assert(AmpDistinctSizes<AmpTensorList1, AmpTensorList2, AmpTensorList4, AmpTensorList5, AmpOptimizerArgs,
                               AmpReduceShape, AmpTransposeShape, AmpConvShape, AmpPoolShape>::value,
              "two recorded by-value structs have one size: a checker could not tell their parameters apart");

#undef AMP_LAYOUT_OFFSET
#undef AMP_LAYOUT_FIELD
#undef AMP_LAYOUT_HEAD

#endif  // AMP_RUNTIME_KERNELS_CUDA_PARAMLAYOUTS_CU
