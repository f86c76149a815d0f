// The geometry of one cpu convolution step (conv2d and its two gradients), decoded at prepare.
#ifndef AMP_RUNTIME_DEVICES_CPU_STEPS_CONVGEOM_H
#define AMP_RUNTIME_DEVICES_CPU_STEPS_CONVGEOM_H

#include <cstdint>

namespace amp::rt::cpu {

struct ConvGeom {
  int64_t n, c, h, w;       // input
  int64_t o, cg, kh, kw;    // weight [O, C/groups, KH, KW]
  int64_t oh, ow, og;       // output spatial size, output channels per group
  int64_t sh, sw, ph, pw, dh, dw;
};

enum class ConvKind { Forward, GradInput, GradWeight };

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_STEPS_CONVGEOM_H
