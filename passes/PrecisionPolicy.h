// Precision policies as data: which category every amp op belongs to under PyTorch-style autocast
// or TensorFlow-style painting, the built-in tables, the JSON policy-file format and overrides by
// pattern (the auto dtype for a target is runtime/schema/Target.h). Used by amp-autocast and by ampc.
// docs/precision-policy.md is the user-facing description of everything in this header.
#ifndef AMP_PASSES_PRECISIONPOLICY_H
#define AMP_PASSES_PRECISIONPOLICY_H

#include <optional>
#include <string>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "ir/AutocastCategory.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir {
class MLIRContext;
class Operation;
}  // namespace mlir

namespace mlir::amp {

// How decisions are made: per op from its inputs (PyTorch autocast) or by painting the graph
// (TensorFlow grappler auto_mixed_precision).
enum class PolicyStyle { PyTorch, TensorFlow };


llvm::StringRef categoryName(Category c);
std::optional<Category> parseCategory(PolicyStyle style, llvm::StringRef name);
llvm::ArrayRef<Category> listCategories(PolicyStyle style);  // categories a policy file may edit
llvm::StringRef styleName(PolicyStyle style);

// What an override asks for.
enum class ForcedPrecision { F32, F16, BF16, Low, Off };
std::optional<ForcedPrecision> parseForced(llvm::StringRef s);  // f32|f16|bf16|low|off
llvm::StringRef forcedName(ForcedPrecision f);

// An override by pattern: `glob` is matched against the op's location name (see locationName)
// or, with matchOpName, against the op name ("amp.reduce_*").
struct PatternOverride {
  std::string pattern;
  bool matchOpName = false;
  ForcedPrecision precision = ForcedPrecision::F32;
  std::string origin;  // where it was written, for diagnostics
  bool matches(Operation* op) const;
  std::string describe() const;  // "loc 'attn.*' -> f32 (policy file p.json)"
};

// Parses "PATTERN=PRECISION" (PATTERN may start with "op:" to match op names).
llvm::FailureOr<PatternOverride> parseOverrideSpec(llvm::StringRef spec, llvm::StringRef origin,
                                                   std::string& error);

class PrecisionPolicy {
 public:
  // `name` is "pytorch", "tensorflow" (the fp16 or bf16 lists by `lowIsBF16`),
  // "tensorflow-fp16", "tensorflow-bf16", or a path to a JSON policy file.
  static llvm::FailureOr<PrecisionPolicy> load(MLIRContext* ctx, llvm::StringRef name,
                                               bool lowIsBF16, std::string& error);
  static llvm::FailureOr<PrecisionPolicy> builtin(MLIRContext* ctx, llvm::StringRef name,
                                                  bool lowIsBF16, std::string& error);
  static llvm::FailureOr<PrecisionPolicy> parseJson(MLIRContext* ctx, llvm::StringRef text,
                                                    llvm::StringRef origin, bool lowIsBF16,
                                                    std::string& error);

  PolicyStyle style() const { return style_; }
  llvm::StringRef name() const { return name_; }
  // Category of an op name ("amp.matmul"); ops on no list get the style's default
  // (Fallthrough for PyTorch, Unlisted for TensorFlow).
  Category categoryOf(llvm::StringRef opName) const;
  bool isListed(llvm::StringRef opName) const { return table_.count(opName); }
  llvm::ArrayRef<PatternOverride> overrides() const { return overrides_; }
  void addOverride(PatternOverride o) { overrides_.push_back(std::move(o)); }
  // Checks that every listed op is a known amp compute op (lists are disjoint by construction).
  LogicalResult validate(MLIRContext* ctx, std::string& error) const;
  // Ops of `c`, sorted.
  llvm::SmallVector<std::string> opsIn(Category c) const;

 private:
  friend struct PolicyBuilder;
  PolicyStyle style_ = PolicyStyle::PyTorch;
  std::string name_;
  llvm::StringMap<Category> table_;
  llvm::SmallVector<PatternOverride> overrides_;
};

// The amp ops a policy may list: every registered amp op except amp.cast and amp.constant.
llvm::SmallVector<std::string> listableAmpOps(MLIRContext* ctx);

// A short, stable name for a location: the NameLoc name if there is one, else
// "file:line:col" (file without directories), else "?".
std::string locationName(Location loc);

}  // namespace mlir::amp

#endif  // AMP_PASSES_PRECISIONPOLICY_H
