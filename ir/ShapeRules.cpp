#include "ir/ShapeRules.h"

#include <algorithm>
#include <limits>

namespace mlir::amp {

std::optional<llvm::SmallVector<int64_t>> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                                          llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  if (from.size() > to.size()) return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  // In 128 bits: attributes and dimensions near 2^63 must not overflow (stride >= 1, checked).
  __int128 span = static_cast<__int128>(dilation) * (kernel - 1) + 1;
  __int128 avail = static_cast<__int128>(in) + 2 * static_cast<__int128>(pad) - span;
  if (avail < 0) return 0;
  __int128 size = avail / stride + 1;
  return size > std::numeric_limits<int64_t>::max() ? 0 : static_cast<int64_t>(size);
}

}  // namespace mlir::amp
