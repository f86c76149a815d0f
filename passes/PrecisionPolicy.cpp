// Built-in precision policies (data tables), the JSON policy-file parser with validation, pattern
// overrides and the auto-dtype decision. docs/precision-policy.md mirrors the tables below.
#include "passes/PrecisionPolicy.h"

#include "runtime/schema/CpuFeatures.h"

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

std::optional<Forced> mlir::amp::parseForced(StringRef s) {
  if (s == "f32") return Forced::F32;
  if (s == "f16") return Forced::F16;
  if (s == "bf16") return Forced::BF16;
  if (s == "low") return Forced::Low;
  if (s == "off") return Forced::Off;
  return std::nullopt;
}

StringRef mlir::amp::forcedName(Forced f) {
  switch (f) {
    case Forced::F32: return "f32";
    case Forced::F16: return "f16";
    case Forced::BF16: return "bf16";
    case Forced::Low: return "low";
    case Forced::Off: return "off";
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

//===----------------------------------------------------------------------===//
// JSON policy files
//===----------------------------------------------------------------------===//

FailureOr<PrecisionPolicy> PrecisionPolicy::load(MLIRContext* ctx, StringRef name,
                                                 bool lowIsBF16, std::string& error) {
  if (!name.ends_with(".json")) return builtin(ctx, name, lowIsBF16, error);
  auto buffer = llvm::MemoryBuffer::getFile(name);
  if (!buffer) {
    error = ("cannot read policy file '" + name + "': " + buffer.getError().message()).str();
    return failure();
  }
  return parseJson(ctx, (*buffer)->getBuffer(), name, lowIsBF16, error);
}

namespace {
// Expands one list entry ("matmul", "amp.matmul" or a glob such as "amp.reduce_*") against the
// listable ops. An entry that names nothing is an error.
LogicalResult expandOps(StringRef entry, ArrayRef<std::string> known, StringRef where,
                        SmallVectorImpl<std::string>& out, std::string& error) {
  std::string full = entry.starts_with("amp.") ? entry.str() : ("amp." + entry).str();
  if (full == "amp.cast" || full == "amp.constant") {
    error = (where + ": '" + full +
             "' cannot be listed (casts are explicit user intent; constants keep their type)")
                .str();
    return failure();
  }
  bool isGlob = StringRef(full).find_first_of("*?[") != StringRef::npos;
  if (!isGlob) {
    if (!llvm::is_contained(known, full)) {
      error = (where + ": unknown op '" + entry + "'").str();
      return failure();
    }
    out.push_back(full);
    return success();
  }
  auto glob = llvm::GlobPattern::create(full);
  if (!glob) {
    error = (where + ": bad pattern '" + entry + "': " + llvm::toString(glob.takeError())).str();
    return failure();
  }
  size_t before = out.size();
  for (const std::string& k : known)
    if (glob->match(k)) out.push_back(k);
  if (out.size() == before) {
    error = (where + ": pattern '" + entry + "' matches no amp op").str();
    return failure();
  }
  return success();
}

std::string jsonKind(const llvm::json::Value& v) {
  switch (v.kind()) {
    case llvm::json::Value::Null: return "null";
    case llvm::json::Value::Boolean: return "a boolean";
    case llvm::json::Value::Number: return "a number";
    case llvm::json::Value::String: return "a string";
    case llvm::json::Value::Array: return "an array";
    case llvm::json::Value::Object: return "an object";
  }
  return "?";
}

LogicalResult stringArray(const llvm::json::Value& v, StringRef where,
                          SmallVectorImpl<std::string>& out, std::string& error) {
  const auto* arr = v.getAsArray();
  if (!arr) {
    error = (where + " must be an array of strings, got " + jsonKind(v)).str();
    return failure();
  }
  for (size_t i = 0; i < arr->size(); ++i) {
    auto s = (*arr)[i].getAsString();
    if (!s) {
      error = (where + "[" + Twine(i) + "] must be a string, got " + jsonKind((*arr)[i])).str();
      return failure();
    }
    out.push_back(s->str());
  }
  return success();
}
}  // namespace

FailureOr<PrecisionPolicy> PrecisionPolicy::parseJson(MLIRContext* ctx, StringRef text,
                                                      StringRef origin, bool lowIsBF16,
                                                      std::string& error) {
  std::string file = ("policy file '" + origin + "'").str();
  auto parsed = llvm::json::parse(text);
  if (!parsed) {
    error = file + ": invalid JSON: " + llvm::toString(parsed.takeError());
    return failure();
  }
  const auto* root = parsed->getAsObject();
  if (!root) {
    error = file + ": the top level must be an object, got " + jsonKind(*parsed);
    return failure();
  }
  static const char* kKeys[] = {"version", "base", "description", "lists", "overrides"};
  for (auto& kv : *root)
    if (!llvm::is_contained(kKeys, StringRef(kv.first))) {
      error = file + ": unknown key '" + kv.first.str() +
              "' (expected version, base, description, lists, overrides)";
      return failure();
    }
  if (const auto* version = root->get("version")) {
    auto n = version->getAsInteger();
    if (!n || *n != 1) {
      error = file + ": 'version' must be 1";
      return failure();
    }
  }
  const auto* baseValue = root->get("base");
  if (!baseValue || !baseValue->getAsString()) {
    error = file +
            ": 'base' is required and must be a string: pytorch, tensorflow, tensorflow-fp16 or "
            "tensorflow-bf16";
    return failure();
  }
  StringRef base = *baseValue->getAsString();
  if (base.ends_with(".json")) {
    error = file + ": 'base' must name a built-in policy, not a file";
    return failure();
  }
  std::string baseError;
  auto policy = builtin(ctx, base, lowIsBF16, baseError);
  if (failed(policy)) {
    error = file + ": " + baseError;
    return failure();
  }
  PrecisionPolicy p = std::move(*policy);
  PolicyBuilder::name(p) = (llvm::sys::path::filename(origin) + " (based on " + p.name() + ")").str();
  auto& table = PolicyBuilder::table(p);
  auto known = listableAmpOps(ctx);

  if (const auto* listsValue = root->get("lists")) {
    const auto* lists = listsValue->getAsObject();
    if (!lists) {
      error = file + ": 'lists' must be an object mapping list names to edits";
      return failure();
    }
    // Deterministic order: process lists in the style's category order.
    for (auto& kv : *lists)
      if (!parseCategory(p.style(), kv.first)) {
        std::string expected;
        for (Category c : listCategories(p.style()))
          expected += (expected.empty() ? "" : ", ") + categoryName(c).str();
        error = file + ": unknown list '" + kv.first.str() + "' for a " +
                styleName(p.style()).str() + " policy (expected " + expected + ")";
        return failure();
      }
    // Removals and replacements first, then additions, so an op can move between lists.
    struct Add {
      std::string op;
      Category c;
      std::string where;
    };
    SmallVector<Add> adds;
    for (Category c : listCategories(p.style())) {
      const auto* edit = lists->get(categoryName(c));
      if (!edit) continue;
      std::string where = "lists." + categoryName(c).str();
      if (edit->getAsArray()) {  // replace the list
        SmallVector<std::string> names;
        if (failed(stringArray(*edit, where, names, error))) return error = file + ": " + error, failure();
        for (auto it = table.begin(); it != table.end();) {
          auto cur = it++;
          if (cur->second == c) table.erase(cur);
        }
        for (size_t i = 0; i < names.size(); ++i) {
          SmallVector<std::string> ops;
          if (failed(expandOps(names[i], known, where + "[" + std::to_string(i) + "]", ops, error)))
            return error = file + ": " + error, failure();
          for (auto& op : ops) adds.push_back({op, c, where});
        }
        continue;
      }
      const auto* obj = edit->getAsObject();
      if (!obj) {
        error = file + ": " + where +
                " must be an array (the whole list) or an object with 'add'/'remove', got " +
                jsonKind(*edit);
        return failure();
      }
      for (auto& kv : *obj)
        if (kv.first != "add" && kv.first != "remove") {
          error = file + ": " + where + ": unknown key '" + kv.first.str() +
                  "' (expected add or remove)";
          return failure();
        }
      if (const auto* rm = obj->get("remove")) {
        SmallVector<std::string> names;
        if (failed(stringArray(*rm, where + ".remove", names, error)))
          return error = file + ": " + error, failure();
        for (size_t i = 0; i < names.size(); ++i) {
          SmallVector<std::string> ops;
          std::string w = where + ".remove[" + std::to_string(i) + "]";
          if (failed(expandOps(names[i], known, w, ops, error))) return error = file + ": " + error, failure();
          for (auto& op : ops) {
            auto it = table.find(op);
            if (it == table.end() || it->second != c) {
              error = file + ": " + w + ": cannot remove '" + op + "' from '" +
                      categoryName(c).str() + "': it is " +
                      (it == table.end() ? std::string("on no list")
                                         : "in '" + categoryName(it->second).str() + "'");
              return failure();
            }
            table.erase(it);
          }
        }
      }
      if (const auto* add = obj->get("add")) {
        SmallVector<std::string> names;
        if (failed(stringArray(*add, where + ".add", names, error)))
          return error = file + ": " + error, failure();
        for (size_t i = 0; i < names.size(); ++i) {
          SmallVector<std::string> ops;
          std::string w = where + ".add[" + std::to_string(i) + "]";
          if (failed(expandOps(names[i], known, w, ops, error))) return error = file + ": " + error, failure();
          for (auto& op : ops) adds.push_back({op, c, w});
        }
      }
    }
    // An op may be on one list only: an addition that meets an op still on another list (or
    // added to two lists) is a conflict that names the op and both lists.
    llvm::StringMap<std::string> addedBy;
    for (const Add& a : adds) {
      auto it = table.find(a.op);
      // `fallthrough` is PyTorch's "not autocast" default, not a real list: adding an op to
      // another list takes it out (unless it was also added there explicitly).
      if (it != table.end() && it->second == Category::Fallthrough && a.c != it->second &&
          !addedBy.count(a.op)) {
        table.erase(it);
        it = table.end();
      }
      if (it != table.end() && it->second != a.c) {
        auto prev = addedBy.find(a.op);
        error = file + ": op '" + a.op + "' is in both '" + categoryName(it->second).str() +
                "' and '" + categoryName(a.c).str() + "' (" + a.where +
                (prev != addedBy.end() ? ", " + prev->second
                                       : "; remove it from '" + categoryName(it->second).str() +
                                             "' first") +
                ")";
        return failure();
      }
      table[a.op] = a.c;
      addedBy.try_emplace(a.op, a.where);
    }
  }

  if (const auto* ovValue = root->get("overrides")) {
    const auto* arr = ovValue->getAsArray();
    if (!arr) {
      error = file + ": 'overrides' must be an array of {\"loc\"|\"op\": PATTERN, \"precision\": P}";
      return failure();
    }
    for (size_t i = 0; i < arr->size(); ++i) {
      std::string where = "overrides[" + std::to_string(i) + "]";
      const auto* obj = (*arr)[i].getAsObject();
      if (!obj) {
        error = file + ": " + where + " must be an object";
        return failure();
      }
      for (auto& kv : *obj)
        if (kv.first != "loc" && kv.first != "op" && kv.first != "precision") {
          error = file + ": " + where + ": unknown key '" + kv.first.str() +
                  "' (expected loc or op, and precision)";
          return failure();
        }
      auto loc = obj->getString("loc");
      auto op = obj->getString("op");
      auto prec = obj->getString("precision");
      if (loc.has_value() == op.has_value()) {
        error = file + ": " + where + " needs exactly one of 'loc' (location-name pattern) or 'op' (op-name pattern)";
        return failure();
      }
      if (!prec) {
        error = file + ": " + where + " needs 'precision' (f32, f16, bf16, low or off)";
        return failure();
      }
      std::string spec = (op ? "op:" + op->str() : loc->str()) + "=" + prec->str();
      if (op && !op->starts_with("amp.")) spec = "op:amp." + op->str() + "=" + prec->str();
      std::string ovError;
      auto o = parseOverrideSpec(spec, (llvm::sys::path::filename(origin) + " " + where).str(), ovError);
      if (failed(o)) {
        error = file + ": " + where + ": " + ovError;
        return failure();
      }
      p.addOverride(std::move(*o));
    }
  }
  if (failed(p.validate(ctx, error))) return failure();
  return p;
}

//===----------------------------------------------------------------------===//
// Targets and auto dtype
//===----------------------------------------------------------------------===//

FailureOr<mlir::amp::AutoDtype> mlir::amp::autoPicksBF16(StringRef target, std::string& why,
                                         std::string& error) {
  if (target == "reference") {
    why = "target 'reference' emulates bf16 exactly";
    return AutoDtype::BF16;
  }
  if (target.consume_front("cuda:")) {
    unsigned sm = 0;
    if (!target.consume_front("sm_") || target.getAsInteger(10, sm)) {
      error = ("bad CUDA target 'cuda:" + target + "' (expected cuda:sm_NN, e.g. cuda:sm_80)").str();
      return failure();
    }
    if (sm >= 80) {
      why = ("cuda:sm_" + Twine(sm) + " has bf16 tensor cores (sm_80 and newer)").str();
      return AutoDtype::BF16;
    }
    why = ("cuda:sm_" + Twine(sm) + " has no bf16 tensor cores (needs sm_80); using f16").str();
    return AutoDtype::F16;
  }
  if (target == "cpu") {
    // The cpu device's own detection and rule for native bf16 GEMMs, so the two cannot disagree.
    if (const std::string& bad = ::amp::rt::CpuFeatures::maskError(); !bad.empty()) {
      error = "--target=cpu: " + bad;
      return failure();
    }
    const ::amp::rt::CpuFeatures& host = ::amp::rt::CpuFeatures::host();
    const bool avx = host.avx512_bf16, amx = host.amx_bf16, amd = host.amd;
    if (amx) {
      why = "cpu: the compiling machine has amx_bf16, so bf16 GEMMs run on AMX tiles";
      return AutoDtype::BF16;
    }
    if (avx && amd) {
      why = "cpu: the compiling machine has avx512_bf16 on an AMD core, whose bf16 dot products do twice "
            "the multiply-adds of f32 FMA";
      return AutoDtype::BF16;
    }
    if (avx) {
      why = "cpu: the compiling machine has avx512_bf16 but no amx_bf16; on Intel cores its bf16 dot "
            "product does no more multiply-adds per cycle than f32 FMA, so bf16 GEMMs run no faster than "
            "f32 ones (the cpu device widens the large ones to f32) and bf16 would only add "
            "conversions: f32 is faster";
      return AutoDtype::F32;
    }
    why = "cpu: the compiling machine has neither avx512_bf16 nor amx_bf16, so no low-precision compute "
          "units; f16 would only add conversions and loss scaling, so f32 is faster and safer";
    return AutoDtype::F32;
  }
  if (target.consume_front("cpu:")) {
    SmallVector<StringRef> features;
    target.split(features, ',', -1, false);
    bool bf16 = false;
    std::string found;
    for (StringRef f : features) {
      f = f.trim();
      bool negated = f.consume_front("-");
      f.consume_front("+");
      if (f != "avx512_bf16" && f != "amx_bf16" && f != "generic") {
        error = ("unknown cpu feature '" + f + "' (expected avx512_bf16, amx_bf16 or generic)").str();
        return failure();
      }
      if (f != "generic" && !negated) {
        bf16 = true;
        found = f.str();
      }
    }
    why = bf16 ? "cpu feature " + found + " supports bf16"
               : std::string("cpu features name no bf16 support, so no low-precision compute units; f16 "
                             "would only add conversions and loss scaling, so f32 is faster and safer");
    return bf16 ? AutoDtype::BF16 : AutoDtype::F32;
  }
  error = ("unknown target '" + target +
           "' (expected cpu, cpu:FEATURES, cuda:sm_NN or reference)")
              .str();
  return failure();
}
