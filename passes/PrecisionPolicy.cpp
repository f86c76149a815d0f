// Built-in precision policies (data tables), categories and pattern overrides. Policy files are
// PolicyFile.cpp; the auto dtype for a target is runtime/schema/Target.h. docs/precision-policy.md
// mirrors the tables below.
#include "passes/PrecisionPolicy.h"

#include <algorithm>
#include <set>

#include "ir/AmpDialect.h"
#include "ir/AmpOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Operation.h"

using namespace mlir;
using namespace mlir::amp;

//===----------------------------------------------------------------------===//
// Categories
//===----------------------------------------------------------------------===//

StringRef mlir::amp::categoryName(Category c) {
  switch (c) {
    case Category::LowerPrecisionFp: return "lower_precision_fp";
    case Category::Fp32: return "fp32";
    case Category::Fp32SetOptDtype: return "fp32_set_opt_dtype";
    case Category::Fp32AppendDtype: return "fp32_append_dtype";
    case Category::Promote: return "promote";
    case Category::Fallthrough: return "fallthrough";
    case Category::Banned: return "banned";
    case Category::Allow: return "allow";
    case Category::Infer: return "infer";
    case Category::Deny: return "deny";
    case Category::Clear: return "clear";
    case Category::Unlisted: return "unlisted";
  }
  return "?";
}

static constexpr Category kPyTorchCategories[] = {
    Category::LowerPrecisionFp, Category::Fp32,        Category::Fp32SetOptDtype,
    Category::Fp32AppendDtype,  Category::Promote,     Category::Fallthrough,
    Category::Banned};
static constexpr Category kTensorFlowCategories[] = {Category::Allow, Category::Infer,
                                                     Category::Deny, Category::Clear};

ArrayRef<Category> mlir::amp::listCategories(PolicyStyle style) {
  if (style == PolicyStyle::PyTorch) return kPyTorchCategories;
  return kTensorFlowCategories;
}

std::optional<Category> mlir::amp::parseCategory(PolicyStyle style, StringRef name) {
  for (Category c : listCategories(style))
    if (categoryName(c) == name) return c;
  return std::nullopt;
}

StringRef mlir::amp::styleName(PolicyStyle style) {
  return style == PolicyStyle::PyTorch ? "pytorch" : "tensorflow";
}

std::optional<ForcedPrecision> mlir::amp::parseForced(StringRef s) {
  if (s == "f32") return ForcedPrecision::F32;
  if (s == "f16") return ForcedPrecision::F16;
  if (s == "bf16") return ForcedPrecision::BF16;
  if (s == "low") return ForcedPrecision::Low;
  if (s == "off") return ForcedPrecision::Off;
  return std::nullopt;
}

StringRef mlir::amp::forcedName(ForcedPrecision f) {
  switch (f) {
    case ForcedPrecision::F32: return "f32";
    case ForcedPrecision::F16: return "f16";
    case ForcedPrecision::BF16: return "bf16";
    case ForcedPrecision::Low: return "low";
    case ForcedPrecision::Off: return "off";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Locations and overrides
//===----------------------------------------------------------------------===//

std::string mlir::amp::locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc)) return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location l : fused.getLocations())
      if (isa<NameLoc>(l)) return locationName(l);
    if (!fused.getLocations().empty()) return locationName(fused.getLocations().front());
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc)) return locationName(call.getCallee());
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (llvm::sys::path::filename(file.getFilename().getValue()) + ":" +
            Twine(file.getLine()) + ":" + Twine(file.getColumn()))
        .str();
  return "?";
}

bool PatternOverride::matches(Operation* op) const {
  // llvm::GlobPattern keeps pointers into its pattern string, so it is built where `pattern`
  // stays put (the pattern was validated when the override was parsed).
  auto glob = llvm::GlobPattern::create(pattern);
  if (!glob) {
    llvm::consumeError(glob.takeError());
    return false;
  }
  if (matchOpName) return glob->match(op->getName().getStringRef());
  return glob->match(locationName(op->getLoc()));
}

std::string PatternOverride::describe() const {
  return ((matchOpName ? "op '" : "loc '") + pattern + "' -> " + forcedName(precision) + " (" +
          origin + ")")
      .str();
}

FailureOr<PatternOverride> mlir::amp::parseOverrideSpec(StringRef spec, StringRef origin,
                                                        std::string& error) {
  auto [pattern, prec] = spec.rsplit('=');
  pattern = pattern.trim();
  prec = prec.trim();
  if (pattern.empty() || prec.empty() || !spec.contains('=')) {
    error = ("override '" + spec + "' must be PATTERN=PRECISION (precision f32, f16, bf16, low or off)")
                .str();
    return failure();
  }
  PatternOverride o;
  if (pattern.consume_front("op:")) o.matchOpName = true;
  auto forced = parseForced(prec);
  if (!forced) {
    error = ("override '" + spec + "': unknown precision '" + prec +
             "' (expected f32, f16, bf16, low or off)")
                .str();
    return failure();
  }
  o.pattern = pattern.str();
  o.precision = *forced;
  o.origin = origin.str();
  auto glob = llvm::GlobPattern::create(o.pattern);
  if (!glob) {
    error = ("override '" + spec + "': bad pattern: " + llvm::toString(glob.takeError())).str();
    return failure();
  }
  return o;
}

//===----------------------------------------------------------------------===//
// Built-in policies: each model op states its categories (AutocastOpInterface, ir/AmpAutocast.cpp).
//===----------------------------------------------------------------------===//

SmallVector<std::string> mlir::amp::listableAmpOps(MLIRContext* ctx) {
  SmallVector<std::string> ops;
  for (RegisteredOperationName name : ctx->getRegisteredOperations()) {
    if (name.getDialectNamespace() != AmpDialect::getDialectNamespace()) continue;
    StringRef n = name.getStringRef();
    if (n == "amp.cast" || n == "amp.constant") continue;
    ops.push_back(n.str());
  }
  llvm::sort(ops);
  return ops;
}

Category PrecisionPolicy::categoryOf(StringRef opName) const {
  auto it = table_.find(opName);
  if (it != table_.end()) return it->second;
  return style_ == PolicyStyle::PyTorch ? Category::Fallthrough : Category::Unlisted;
}

SmallVector<std::string> PrecisionPolicy::opsIn(Category c) const {
  SmallVector<std::string> ops;
  for (auto& e : table_)
    if (e.second == c) ops.push_back(e.first().str());
  llvm::sort(ops);
  return ops;
}

LogicalResult PrecisionPolicy::validate(MLIRContext* ctx, std::string& error) const {
  auto known = listableAmpOps(ctx);
  llvm::StringSet<> knownSet;
  for (auto& k : known) knownSet.insert(k);
  SmallVector<std::string> unknown;
  for (auto& e : table_)
    if (!knownSet.contains(e.first())) unknown.push_back(e.first().str());
  if (!unknown.empty()) {
    llvm::sort(unknown);
    error = "policy '" + name_ + "' lists unknown op '" + unknown.front() + "'";
    return failure();
  }
  return success();
}

enum class BuiltinLists { PyTorch, TensorFlowFp16, TensorFlowBf16 };
static FailureOr<PrecisionPolicy> fromModelOps(MLIRContext* ctx, StringRef name, BuiltinLists lists,
                                               std::string& error);

FailureOr<PrecisionPolicy> PrecisionPolicy::builtin(MLIRContext* ctx, StringRef name,
                                                    bool lowIsBF16, std::string& error) {
  if (name == "pytorch") return fromModelOps(ctx, "pytorch", BuiltinLists::PyTorch, error);
  if (name == "tensorflow-fp16" || (name == "tensorflow" && !lowIsBF16))
    return fromModelOps(ctx, "tensorflow-fp16", BuiltinLists::TensorFlowFp16, error);
  if (name == "tensorflow-bf16" || (name == "tensorflow" && lowIsBF16))
    return fromModelOps(ctx, "tensorflow-bf16", BuiltinLists::TensorFlowBf16, error);
  error = ("unknown built-in policy '" + name +
           "' (expected pytorch, tensorflow, tensorflow-fp16, tensorflow-bf16 or a .json file)")
              .str();
  return failure();
}

// Friend-free construction helper: builds through the JSON path's public surface.
namespace mlir::amp {
struct PolicyBuilder {
  static PrecisionPolicy make(StringRef name, PolicyStyle style) {
    PrecisionPolicy p;
    p.name_ = name.str();
    p.style_ = style;
    return p;
  }
  static llvm::StringMap<Category>& table(PrecisionPolicy& p) { return p.table_; }
  static std::string& name(PrecisionPolicy& p) { return p.name_; }
};
}  // namespace mlir::amp

static FailureOr<PrecisionPolicy> fromModelOps(MLIRContext* ctx, StringRef name, BuiltinLists lists,
                                               std::string& error) {
  const PolicyStyle style = lists == BuiltinLists::PyTorch ? PolicyStyle::PyTorch : PolicyStyle::TensorFlow;
  PrecisionPolicy p = PolicyBuilder::make(name, style);
  auto& table = PolicyBuilder::table(p);
  for (RegisteredOperationName op : ctx->getRegisteredOperations()) {
    auto* model = op.getInterface<AutocastOpInterface>();
    if (!model) continue;  // gradient, training and fused-region ops are not policy-controlled
    std::optional<AutocastCategories> c = model->getAutocastCategories();
    if (!c) continue;  // amp.cast, amp.constant
    Category category = lists == BuiltinLists::PyTorch          ? c->pytorch
                        : lists == BuiltinLists::TensorFlowFp16 ? c->tensorflowFp16
                                                                : c->tensorflowBf16;
    if (category == Category::Unlisted) continue;  // on no TensorFlow list: stays f32
    table[op.getStringRef()] = category;
  }
  if (failed(p.validate(ctx, error))) return failure();
  return p;
}
