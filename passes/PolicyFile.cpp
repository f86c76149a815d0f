// JSON policy files: a base policy, list edits by op name or glob, and pattern overrides, each
// validated with a located error (docs/precision-policy.md, "Policy files").
#include <algorithm>
#include <set>

#include "passes/PrecisionPolicy.h"
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
  p.name_ = (llvm::sys::path::filename(origin) + " (based on " + p.name() + ")").str();
  auto& table = p.table_;  // parseJson is a member: it edits the copy of its base
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
