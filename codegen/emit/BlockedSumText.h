// The C text of the contract's summation order (docs/numerics.md, "Summation order";
// runtime/kernels/math/SumOrder.h) for the column sums of generated fused kernels, which the CPU
// and CUDA flavours write out: every AMP_SUM_BLOCK rows the running sums become block sums that a
// binary counter adds pairwise (level l holds 2^l blocks), and the held levels are added from the
// smallest up at the end. Emitted only for more than one block of rows; up to one block the plain
// in-order sum is already the order.
#ifndef AMP_CODEGEN_EMIT_BLOCKEDSUMTEXT_H
#define AMP_CODEGEN_EMIT_BLOCKEDSUMTEXT_H

#include <cstdint>
#include <string>

#include "runtime/kernels/math/SumOrder.h"

namespace amp::codegen {

struct BlockedSumText {
  int64_t rows = 0;         // the sums' terms, one per row
  size_t sums = 0;          // accumulators acc0, acc1, ...; their levels lvl0, lvl1, ...
  std::string overColumns;  // a loop prefix over a block of columns ("" for one column)
  std::string element;      // the column's subscript ("" for one column)

  bool needed() const { return rows > AMP_SUM_BLOCK; }
  int levels() const {
    int l = 1;
    for (int64_t blocks = (rows + AMP_SUM_BLOCK - 1) / AMP_SUM_BLOCK; blocks > 1; blocks >>= 1) ++l;
    return l;
  }
  // The level arrays and the block counter, before the row loop.
  std::string declare(const std::string& indent, const std::string& columnsExtent) const {
    std::string s;
    for (size_t a = 0; a < sums; ++a)
      s += indent + "float lvl" + std::to_string(a) + "[" + std::to_string(levels()) + "]" + columnsExtent + ";\n";
    return s + indent + "long long blocks = 0;\n";
  }
  // After row `row`'s terms were added: closes the block when it is full or the last.
  std::string closeBlock(const std::string& indent) const {
    const std::string in2 = indent + "  ";
    std::string s = indent + "if ((row + 1) % " + std::to_string(AMP_SUM_BLOCK) + " == 0 || row + 1 == " +
                    std::to_string(rows) + ") {\n" + in2 + "long long b = blocks++;\n" + in2 + "int l = 0;\n" + in2 +
                    "for (; b & 1; b >>= 1, ++l) {\n";
    for (size_t a = 0; a < sums; ++a)
      s += in2 + "  " + overColumns + acc(a) + " = " + lvl(a) + " + " + acc(a) + ";\n";
    s += in2 + "}\n";
    for (size_t a = 0; a < sums; ++a)
      s += in2 + overColumns + "{ " + lvl(a) + " = " + acc(a) + "; " + acc(a) + " = 0.0f; }\n";
    return s + indent + "}\n";
  }
  // After the row loop: acc_a becomes the sum of the held levels, smallest first.
  std::string finish(const std::string& indent) const {
    std::string s = indent + "for (int l = 0, any = 0; l < " + std::to_string(levels()) + "; ++l) {\n" + indent +
                    "  if (!((blocks >> l) & 1)) continue;\n";
    for (size_t a = 0; a < sums; ++a)
      s += indent + "  " + overColumns + acc(a) + " = any ? " + lvl(a) + " + " + acc(a) + " : " + lvl(a) + ";\n";
    return s + indent + "  any = 1;\n" + indent + "}\n";
  }

 private:
  std::string acc(size_t a) const { return "acc" + std::to_string(a) + element; }
  std::string lvl(size_t a) const { return "lvl" + std::to_string(a) + "[l]" + element; }
};

}  // namespace amp::codegen

#endif  // AMP_CODEGEN_EMIT_BLOCKEDSUMTEXT_H
