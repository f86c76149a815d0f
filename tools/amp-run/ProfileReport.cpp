#include "tools/amp-run/ProfileReport.h"

#include <algorithm>
#include <cstdio>

namespace {

constexpr size_t kOpsShown = 12;

// "  12.3 MB  45.6 GB/s (0.78 of copy)": a category's bytes against the copy bandwidth.
void printTraffic(double mbytes, double ms, double copyGbPerS) {
  const double gbs = mbytes / ms;  // MB per ms = GB per s
  std::printf("  %8.1f MB     %7.1f GB/s", mbytes, gbs);
  if (copyGbPerS > 0) std::printf(" (%.2f of copy)", gbs / copyGbPerS);
}

}  // namespace

void printProfile(const std::string& entry, const amp::rt::EntryProfile& profile, bool clocked) {
  double sum = 0;
  for (const auto& c : profile.categories) sum += c.ms;
  const bool host = !profile.slowest.empty();  // the host devices time each step in place
  std::printf("profile of %s: %d call(s), %s%s\n", entry.c_str(), profile.calls,
              host ? "each step timed as the call runs it" : "each timed as its graph, then operation by operation",
              clocked ? "" : " (the dry run has no clock: operation counts only)");
  for (const auto& c : profile.categories) {
    if (!clocked) {
      std::printf("  %-17s %lld operation(s)\n", c.name.c_str(), static_cast<long long>(c.operations));
      continue;
    }
    std::printf("  %-17s %9.3f ms  %5.1f%%  %4lld operation(s)", c.name.c_str(), c.ms, sum > 0 ? 100.0 * c.ms / sum : 0.0,
                static_cast<long long>(c.operations));
    if (c.gflop > 0 && c.ms > 0) std::printf("  %8.3f GFLOP  %7.1f GFLOP/s", c.gflop, c.gflop / (c.ms / 1e3));
    else if (c.mbytes > 0 && c.ms > 0) printTraffic(c.mbytes, c.ms, profile.copyGbPerS);
    std::printf("\n");
  }
  if (!clocked) return;
  if (host) {
    std::printf("  steps' sum        %9.3f ms; the call %.3f ms\n", sum, profile.callMs);
    if (profile.copyGbPerS > 0)
      std::printf("  memory: a STREAM-like copy runs at %.1f GB/s on these threads; GB/s above count each step's operands\n"
                  "  read once and results written once (a step at the copy's rate is at memory speed)\n",
                  profile.copyGbPerS);
    std::printf("  by operation (the %zu slowest of %zu):\n", std::min<size_t>(profile.ops.size(), kOpsShown), profile.ops.size());
    for (size_t i = 0; i < profile.ops.size() && i < kOpsShown; ++i) {
      const auto& o = profile.ops[i];
      std::printf("    %8.3f ms  %5.1f%%  %4lld step(s)  %-24s %-17s", o.ms, sum > 0 ? 100.0 * o.ms / sum : 0.0,
                  static_cast<long long>(o.steps), o.op.c_str(), o.category.c_str());
      if (o.gflop > 0 && o.ms > 0) std::printf(" %7.1f GFLOP/s", o.gflop / (o.ms / 1e3));
      else if (o.mbytes > 0 && o.ms > 0) printTraffic(o.mbytes, o.ms, profile.copyGbPerS);
      std::printf("\n");
    }
    std::printf("  slowest steps:\n");
    for (const auto& s : profile.slowest) {
      std::printf("    %8.3f ms  %5.1f%%  #%-4zu %-24s %-17s", s.ms, sum > 0 ? 100.0 * s.ms / sum : 0.0, s.index, s.op.c_str(),
                  s.category.c_str());
      if (s.gflop > 0 && s.ms > 0) std::printf(" %7.1f GFLOP/s", s.gflop / (s.ms / 1e3));
      else if (s.mbytes > 0 && s.ms > 0) std::printf(" %7.1f GB/s   ", s.mbytes / s.ms);
      else std::printf(" %15s", "");
      std::printf("  %s\n", s.loc.empty() ? "(no location)" : s.loc.c_str());
    }
  } else {
    std::printf("  operations' sum   %9.3f ms; the graph %.3f ms (the sum includes a launch gap per operation)\n", sum,
                profile.callMs);
  }
}
