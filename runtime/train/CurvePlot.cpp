#include "runtime/train/CurvePlot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace amp::rt {
namespace {

constexpr double kWidth = 720, kPanel = 220, kLeft = 70, kRight = 20, kTop = 40, kGap = 50;

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// One panel: a polyline of `ys` over steps, y range [lo, hi], with min/max labels.
std::string panel(const std::vector<double>& ys, double top, double lo, double hi, const std::string& label,
                  const std::string& colour, int64_t firstStep, const std::string& loLabel,
                  const std::string& hiLabel) {
  double plotW = kWidth - kLeft - kRight;
  std::string s = "<rect x='" + fmt(kLeft) + "' y='" + fmt(top) + "' width='" + fmt(plotW) + "' height='" +
                  fmt(kPanel) + "' fill='none' stroke='#999'/>\n";
  s += "<text x='" + fmt(kLeft) + "' y='" + fmt(top - 6) + "' font-size='13'>" + label + "</text>\n";
  s += "<text x='" + fmt(kLeft - 6) + "' y='" + fmt(top + 12) + "' font-size='11' text-anchor='end'>" + hiLabel + "</text>\n";
  s += "<text x='" + fmt(kLeft - 6) + "' y='" + fmt(top + kPanel) + "' font-size='11' text-anchor='end'>" + loLabel + "</text>\n";
  s += "<text x='" + fmt(kLeft) + "' y='" + fmt(top + kPanel + 14) + "' font-size='11'>step " +
       std::to_string(firstStep + 1) + "</text>\n";
  s += "<text x='" + fmt(kWidth - kRight) + "' y='" + fmt(top + kPanel + 14) +
       "' font-size='11' text-anchor='end'>step " + std::to_string(firstStep + static_cast<int64_t>(ys.size())) + "</text>\n";
  if (ys.empty()) return s;
  s += "<polyline fill='none' stroke='" + colour + "' stroke-width='1.2' points='";
  double span = hi > lo ? hi - lo : 1;
  size_t n = ys.size();
  for (size_t i = 0; i < n; ++i) {
    double x = kLeft + (n == 1 ? 0 : plotW * static_cast<double>(i) / static_cast<double>(n - 1));
    double v = std::isfinite(ys[i]) ? ys[i] : hi;
    double y = top + kPanel * (1 - (std::clamp(v, lo, hi) - lo) / span);
    s += fmt(x) + "," + fmt(y) + " ";
  }
  s += "'/>\n";
  return s;
}

// A mark at the top of the loss panel for every skipped (overflow) step, with a count.
std::string skippedMarks(const std::vector<bool>& skipped, double top) {
  double plotW = kWidth - kLeft - kRight;
  size_t n = skipped.size(), count = 0;
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (!skipped[i]) continue;
    ++count;
    double x = kLeft + (n == 1 ? 0 : plotW * static_cast<double>(i) / static_cast<double>(n - 1));
    s += "<line class='skipped' x1='" + fmt(x) + "' y1='" + fmt(top) + "' x2='" + fmt(x) + "' y2='" + fmt(top + 10) +
         "' stroke='#d62728' stroke-width='1.5'/>\n";
  }
  if (count)
    s += "<text x='" + fmt(kWidth - kRight) + "' y='" + fmt(top - 6) + "' font-size='12' fill='#d62728' text-anchor='end'>" +
         std::to_string(count) + " skipped step" + (count == 1 ? "" : "s") + " (overflow), marked</text>\n";
  return s;
}

}  // namespace

std::string renderCurveSvg(const std::vector<double>& losses, const std::vector<double>& scales,
                           const std::vector<bool>& skipped, int64_t firstStep, const std::string& title) {
  double height = kTop + 2 * kPanel + kGap + 30;
  std::string s = "<svg xmlns='http://www.w3.org/2000/svg' width='" + fmt(kWidth) + "' height='" + fmt(height) +
                  "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  s += "<text x='" + fmt(kLeft) + "' y='18' font-size='15'>" + title + "</text>\n";
  double lo = INFINITY, hi = -INFINITY;
  for (double v : losses)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  s += panel(losses, kTop, lo, hi, "training loss", "#1f77b4", firstStep, fmt(lo), fmt(hi));
  s += skippedMarks(skipped, kTop);
  std::vector<double> logScale;
  double slo = INFINITY, shi = -INFINITY;
  for (double v : scales) {
    double l = v > 0 ? std::log2(v) : 0;
    logScale.push_back(l);
    slo = std::min(slo, l), shi = std::max(shi, l);
  }
  if (!std::isfinite(slo)) slo = 0, shi = 1;
  if (shi - slo < 1) shi = slo + 1;
  s += panel(logScale, kTop + kPanel + kGap, slo, shi, "loss scale (log2)", "#d62728", firstStep,
             "2^" + fmt(slo), "2^" + fmt(shi));
  return s + "</svg>\n";
}

}  // namespace amp::rt
