// A self-contained SVG of the training curves: loss per step (top) and loss scale on a log2 axis
// (bottom), so a collapsing scale or a diverging loss is visible at a glance.
#ifndef AMP_RUNTIME_TRAIN_CURVEPLOT_H
#define AMP_RUNTIME_TRAIN_CURVEPLOT_H

#include <cstdint>
#include <string>
#include <vector>

namespace amp::rt {

// `skipped` marks the steps that overflowed (their updates were skipped).
std::string renderCurveSvg(const std::vector<double>& losses, const std::vector<double>& scales,
                           const std::vector<bool>& skipped, int64_t firstStep, const std::string& title);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_CURVEPLOT_H
