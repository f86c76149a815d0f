// The extent a convolution or pooling window sweeps, from attributes a bundle may have edited.
#ifndef AMP_RUNTIME_WINDOWGEOMETRY_H
#define AMP_RUNTIME_WINDOWGEOMETRY_H

#include <cstdint>
#include <optional>

namespace amp::rt {

// The last start of a window of `kernel` taps `dilation` apart in an input of `in` elements padded
// by `pad` on each side: in + 2 pad - dilation (kernel - 1) - 1, negative when the window does not
// fit; nullopt when that overflows int64 (an INT64_MAX padding in an edited plan). A pooling window
// is dilation 1: in + 2 pad - kernel.
inline std::optional<int64_t> windowSpan(int64_t in, int64_t pad, int64_t dilation, int64_t kernel) {
  int64_t twoPad = 0, reach = 0, span = 0;
  if (__builtin_mul_overflow(pad, 2, &twoPad) || __builtin_sub_overflow(kernel, 1, &reach) ||
      __builtin_mul_overflow(dilation, reach, &reach) || __builtin_add_overflow(in, twoPad, &span) ||
      __builtin_sub_overflow(span, reach, &span) || __builtin_sub_overflow(span, 1, &span))
    return std::nullopt;
  return span;
}

}  // namespace amp::rt

#endif  // AMP_RUNTIME_WINDOWGEOMETRY_H
