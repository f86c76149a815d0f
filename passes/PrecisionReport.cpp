// Precision report, per-op explanation and Graphviz output (see PrecisionReport.h).
#include "passes/PrecisionReport.h"

#include "ir/Precision.h"

#include <map>

#include "ir/AmpOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/JSON.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "passes/PrecisionPolicy.h"

using namespace mlir;
using namespace mlir::amp;

namespace {


int64_t numel(Type t) {
  auto s = dyn_cast<ShapedType>(t);
  return s && s.hasStaticShape() ? s.getNumElements() : 0;
}

std::string typeStr(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

// "128x784 f32" for tensors.
std::string shortType(Type t) {
  auto s = dyn_cast<RankedTensorType>(t);
  if (!s) return typeStr(t);
  std::string out;
  for (int64_t d : s.getShape()) out += (out.empty() ? "" : "x") + std::to_string(d);
  return (out.empty() ? "" : out + " ") + typeStr(s.getElementType());
}

bool isInserted(Operation* op) { return isa<CastOp>(op) && op->hasAttr(AmpDialect::kAutocastInsertedAttr); }

// The precision of an op as annotated (or derived from its result for unannotated ops).
std::string precisionOf(Operation* op) {
  if (auto p = getPrecision(op)) return stringifyPrecision(*p).str();
  for (Type t : op->getResultTypes())
    if (auto s = dyn_cast<ShapedType>(t))
      if (isa<FloatType>(s.getElementType())) return typeStr(s.getElementType());
  return "-";
}

std::string reasonOf(Operation* op) {
  if (auto r = op->getAttrOfType<ReasonAttr>(AmpDialect::kReasonAttr)) return r.render();
  if (isa<CastOp>(op)) return "explicit cast in the model: kept";
  if (isa<ConstantOp>(op)) return "constant: keeps its declared type";
  return "not annotated (run amp-autocast)";
}

// One report row.
struct Row {
  int index;
  Operation* op;
  std::string precision, reason, location;
  SmallVector<Operation*> castsIn;  // inserted casts whose first user is this op
  int64_t flops;
};

struct FuncReport {
  func::FuncOp func;
  SmallVector<Row> rows;
  std::map<std::string, int> opsPerPrecision;
  std::map<std::string, int64_t> flopsPerPrecision;
  std::map<std::string, int> castsByDirection;
  SmallVector<Operation*> returnCasts;
  int inserted = 0, explicitCasts = 0, argumentCasts = 0;
  int64_t totalFlops = 0;
};

FuncReport analyze(func::FuncOp func) {
  FuncReport r;
  r.func = func;
  DenseMap<Operation*, int> rowOf;
  DenseMap<Operation*, Operation*> firstUser;
  // Program order numbering; an inserted cast belongs to its first user in program order.
  DenseMap<Operation*, int> order;
  int counter = 0;
  func.walk([&](Operation* op) { order[op] = counter++; });
  func.walk([&](Operation* op) {
    if (!isInserted(op)) return;
    Operation* first = nullptr;
    for (Operation* u : op->getUsers())
      if (!first || order[u] < order[first]) first = u;
    firstUser[op] = first;
    ++r.inserted;
    if (isa<BlockArgument>(op->getOperand(0))) ++r.argumentCasts;
    auto from = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
    auto to = cast<ShapedType>(op->getResult(0).getType()).getElementType();
    ++r.castsByDirection[typeStr(from) + "->" + typeStr(to)];
  });
  int index = 0;
  func.walk([&](Operation* op) {
    if (op == func.getOperation() || isInserted(op)) return;
    if (isa<func::ReturnOp>(op)) return;
    if (!isa_and_nonnull<AmpDialect>(op->getDialect())) return;
    if (isa<CastOp>(op)) ++r.explicitCasts;
    Row row{++index, op, precisionOf(op), reasonOf(op), locationName(op->getLoc()), {},
            estimateFlops(op)};
    rowOf[op] = r.rows.size();
    r.rows.push_back(row);
    if (!isa<CastOp, ConstantOp>(op)) {
      ++r.opsPerPrecision[row.precision];
      r.flopsPerPrecision[row.precision] += row.flops;
      r.totalFlops += row.flops;
    }
  });
  for (auto& [castOp, user] : firstUser) {
    if (!user) continue;
    if (isa<func::ReturnOp>(user)) {
      r.returnCasts.push_back(castOp);
      continue;
    }
    auto it = rowOf.find(user);
    if (it != rowOf.end()) r.rows[it->second].castsIn.push_back(castOp);
  }
  for (Row& row : r.rows)
    llvm::sort(row.castsIn, [&](Operation* a, Operation* b) { return order[a] < order[b]; });
  return r;
}

std::string castDescription(Operation* castOp) {
  Value in = castOp->getOperand(0);
  std::string from;
  if (auto arg = dyn_cast<BlockArgument>(in)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    StringAttr name = func ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), AmpDialect::kNameAttr)
                           : StringAttr();
    from = name ? "argument '" + name.getValue().str() + "'"
                : "argument #" + std::to_string(arg.getArgNumber());
  } else {
    Operation* def = in.getDefiningOp();
    from = "'" + def->getName().getStringRef().str() + "' at " + locationName(def->getLoc());
  }
  int users = std::distance(castOp->getUsers().begin(), castOp->getUsers().end());
  return from + ": " + shortType(in.getType()) + " -> " +
         typeStr(cast<ShapedType>(castOp->getResult(0).getType()).getElementType()) +
         (users > 1 ? " (shared by " + std::to_string(users) + " users)" : "");
}

std::string percent(int64_t part, int64_t total) {
  if (total <= 0) return "0.0%";
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.1f%%", 100.0 * double(part) / double(total));
  return s;
}

std::string moduleHeader(ModuleOp module) {
  std::string s;
  if (auto r = module->getAttrOfType<ReasonAttr>(AmpDialect::kReasonAttr)) s += r.render();
  if (auto t = module->getAttrOfType<StringAttr>(AmpDialect::kTargetAttr))
    s += (s.empty() ? "" : "; ") + ("target " + t.getValue()).str();
  return s.empty() ? "not autocast" : s;
}

}  // namespace

int64_t mlir::amp::estimateFlops(Operation* op) {
  if (op->getNumResults() == 0) return 0;
  Type resultType = op->getResult(0).getType();
  int64_t out = numel(resultType);
  auto in0 = [&]() { return op->getNumOperands() ? numel(op->getOperand(0).getType()) : 0; };
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    auto lhs = mm.getLhs().getType();
    int64_t k = lhs.getShape()[lhs.getRank() - (mm.getTransposeA() ? 2 : 1)];
    return 2 * out * k;
  }
  if (auto lin = dyn_cast<LinearOp>(op)) {
    int64_t k = lin.getInput().getType().getShape().back();
    return 2 * out * k + (lin.getBias() ? out : 0);
  }
  if (auto conv = dyn_cast<Conv2DOp>(op)) {
    auto w = conv.getWeight().getType().getShape();  // [O, C/groups, KH, KW]
    return 2 * out * w[1] * w[2] * w[3] + (conv.getBias() ? out : 0);
  }
  if (auto pool = dyn_cast<MaxPool2DOp>(op)) {
    auto k = pool.getKernel();
    return out * k[0] * k[1];
  }
  if (auto pool = dyn_cast<AvgPool2DOp>(op)) {
    auto k = pool.getKernel();
    return out * k[0] * k[1];
  }
  if (isa<SoftmaxOp, LogSoftmaxOp>(op)) return 5 * out;
  if (isa<SoftmaxGradOp>(op)) return 4 * out;  // the mul, sum, sub and mul of the chain it replaces
  if (isa<LayerNormOp>(op)) return 8 * out;
  if (isa<RmsNormOp>(op)) return 6 * out;
  // Training: sum, centred squares, normalise, scale and shift; inference: the last two.
  if (auto bn = dyn_cast<BatchNormOp>(op)) return (bn.getTraining() ? 7 : 4) * out;
  if (isa<CrossEntropyOp>(op)) return 6 * in0();
  if (isa<MseLossOp>(op)) return 3 * in0();
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op)) return in0();
  if (isa<GeluOp>(op)) return 8 * out;
  if (isa<SiluOp, SigmoidOp, TanhOp, ErfOp>(op)) return 4 * out;
  if (isa<CastOp, ConstantOp, ReshapeOp, TransposeOp, BroadcastToOp, SliceOp, ConcatOp,
          EmbeddingOp>(op))
    return 0;
  return out;  // elementwise, compare, select, dropout
}

void mlir::amp::printPrecisionReport(ModuleOp module, llvm::raw_ostream& os, bool json) {
  std::vector<FuncReport> reports;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal()) reports.push_back(analyze(func));

  if (json) {
    llvm::json::OStream j(os, 2);
    j.object([&] {
      j.attribute("autocast", moduleHeader(module));
      if (auto p = getPrecision(module)) j.attribute("dtype", stringifyPrecision(*p));
      j.attributeArray("functions", [&] {
        for (FuncReport& r : reports) {
          j.object([&] {
            j.attribute("name", r.func.getSymName());
            j.attributeArray("ops", [&] {
              for (Row& row : r.rows)
                j.object([&] {
                  j.attribute("index", row.index);
                  j.attribute("op", row.op->getName().getStringRef());
                  j.attribute("loc", row.location);
                  j.attribute("precision", row.precision);
                  j.attribute("casts_added", int64_t(row.castsIn.size()));
                  j.attribute("flops", row.flops);
                  j.attribute("reason", row.reason);
                });
            });
            j.attribute("casts_added", r.inserted);
            j.attribute("casts_of_arguments", r.argumentCasts);
            j.attribute("casts_before_return", int64_t(r.returnCasts.size()));
            j.attribute("explicit_casts", r.explicitCasts);
            j.attributeObject("casts_by_direction", [&] {
              for (auto& [k, v] : r.castsByDirection) j.attribute(k, v);
            });
            j.attributeObject("ops_per_precision", [&] {
              for (auto& [k, v] : r.opsPerPrecision) j.attribute(k, v);
            });
            j.attribute("total_flops", r.totalFlops);
            j.attributeObject("flops_per_precision", [&] {
              for (auto& [k, v] : r.flopsPerPrecision) j.attribute(k, v);
            });
          });
        }
      });
    });
    os << "\n";
    return;
  }

  os << "Precision report (" << moduleHeader(module) << ")\n";
  for (FuncReport& r : reports) {
    os << "\n@" << r.func.getSymName() << "\n";
    size_t opW = 2, locW = 8;
    for (Row& row : r.rows) {
      opW = std::max(opW, row.op->getName().getStringRef().size());
      locW = std::max(locW, row.location.size());
    }
    os << llvm::right_justify("#", 4) << "  " << llvm::left_justify("op", opW) << "  "
       << llvm::left_justify("location", locW) << "  " << llvm::left_justify("precision", 9)
       << "  " << llvm::left_justify("casts", 5) << "  reason\n";
    for (Row& row : r.rows) {
      os << llvm::format("%4d  ", row.index)
         << llvm::left_justify(row.op->getName().getStringRef(), opW) << "  "
         << llvm::left_justify(row.location, locW) << "  " << llvm::left_justify(row.precision, 9)
         << "  " << llvm::left_justify(std::to_string(row.castsIn.size()), 5) << "  "
         << row.reason << "\n";
    }
    if (!r.returnCasts.empty())
      os << llvm::right_justify("", 4) << "  " << llvm::left_justify("func.return", opW) << "  "
         << llvm::left_justify("", locW) << "  " << llvm::left_justify("", 9) << "  "
         << llvm::left_justify(std::to_string(r.returnCasts.size()), 5) << "  "
         << "results keep their declared types\n";
    os << "  ops per precision:";
    for (auto& [k, v] : r.opsPerPrecision) os << " " << k << " " << v << ";";
    os << "\n  casts inserted: " << r.inserted;
    if (!r.castsByDirection.empty()) {
      os << " (";
      bool first = true;
      for (auto& [k, v] : r.castsByDirection) {
        os << (first ? "" : ", ") << k << " " << v;
        first = false;
      }
      os << ")";
    }
    os << ", of which " << r.argumentCasts << " cast function arguments (each once)";
    os << "; explicit casts in the model: " << r.explicitCasts << "\n";
    os << "  FLOPs: " << r.totalFlops << " (forward estimate);";
    for (auto& [k, v] : r.flopsPerPrecision) os << " " << k << " " << percent(v, r.totalFlops) << ";";
    os << "\n";
  }
}

LogicalResult mlir::amp::printExplanation(ModuleOp module, StringRef query, llvm::raw_ostream& os) {
  // "@func#N" or "#N" selects by report index.
  StringRef funcFilter;
  int wantIndex = -1;
  {
    StringRef q = query;
    size_t hash = q.find('#');
    if (q.starts_with("@") && hash != StringRef::npos) {
      funcFilter = q.slice(1, hash);
      q = q.drop_front(hash);
    }
    if (q.starts_with("#")) {
      int v;
      if (!q.drop_front().getAsInteger(10, v)) wantIndex = v;
    }
  }
  std::optional<llvm::GlobPattern> glob;
  if (auto g = llvm::GlobPattern::create(query)) glob = std::move(*g);
  else llvm::consumeError(g.takeError());

  int matches = 0;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal()) continue;
    if (!funcFilter.empty() && func.getSymName() != funcFilter) continue;
    FuncReport r = analyze(func);
    for (Row& row : r.rows) {
      Operation* op = row.op;
      std::string fileLoc;
      op->getLoc()->walk([&](Location l) {
        if (auto f = dyn_cast<FileLineColLoc>(l)) {
          fileLoc = locationName(f);
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      bool hit = wantIndex >= 0 ? row.index == wantIndex
                                : (row.location == query || (glob && glob->match(row.location)) ||
                                   op->getName().getStringRef() == query ||
                                   (!fileLoc.empty() && StringRef(fileLoc).starts_with(query) &&
                                    (fileLoc.size() == query.size() ||
                                     fileLoc[query.size()] == ':')));
      if (!hit) continue;
      ++matches;
      os << "#" << row.index << " " << op->getName() << " at " << row.location << " in @"
         << func.getSymName() << "\n";
      os << "  precision: " << row.precision << "\n";
      os << "  reason:    " << row.reason << "\n";
      os << "  autocast:  " << moduleHeader(module) << "\n";
      os << "  inputs:\n";
      for (Value v : op->getOperands()) {
        Operation* def = v.getDefiningOp();
        os << "    " << shortType(v.getType()) << " from ";
        if (def && isInserted(def)) {
          os << "a cast inserted by autocast, of " << castDescription(def) << "\n";
        } else if (def) {
          os << "'" << def->getName() << "' at " << locationName(def->getLoc()) << "\n";
        } else {
          auto arg = cast<BlockArgument>(v);
          auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), AmpDialect::kNameAttr);
          os << "argument " << (name ? "'" + name.getValue().str() + "'" : "#" + std::to_string(arg.getArgNumber())) << "\n";
        }
      }
      os << "  outputs:\n";
      for (Value v : op->getResults()) {
        os << "    " << shortType(v.getType()) << " to";
        bool any = false;
        for (Operation* u : v.getUsers()) {
          any = true;
          if (isInserted(u)) {
            os << " [cast to "
               << typeStr(cast<ShapedType>(u->getResult(0).getType()).getElementType()) << " for";
            for (Operation* uu : u->getUsers()) os << " '" << uu->getName() << "'";
            os << "]";
          } else {
            os << " '" << u->getName() << "'";
            if (!isa<func::ReturnOp>(u)) os << " (" << locationName(u->getLoc()) << ")";
          }
        }
        if (!any) os << " nothing";
        os << "\n";
      }
      os << "  casts added for this op: " << row.castsIn.size() << "\n";
      for (Operation* c : row.castsIn) os << "    " << castDescription(c) << "\n";
      os << "  FLOPs: " << row.flops << " (" << percent(row.flops, r.totalFlops)
         << " of @" << func.getSymName() << ")\n";
    }
  }
  if (matches == 0) {
    os << "no op matches '" << query
       << "' (give a location name or glob, an op name such as amp.softmax, FILE:LINE, or #N "
          "from the precision report)\n";
    return failure();
  }
  return success();
}

void mlir::amp::printPrecisionDot(ModuleOp module, llvm::raw_ostream& os) {
  auto colour = [](StringRef precision) -> StringRef {
    if (precision == "f32") return "#8ecae6";
    if (precision == "bf16") return "#f4a261";
    if (precision == "f16") return "#90be6d";
    return "#ffffff";
  };
  auto escape = [](StringRef s) {
    std::string out;
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out;
  };
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal()) continue;
    FuncReport r = analyze(func);
    DenseMap<Operation*, int> rowIndex;
    for (Row& row : r.rows) rowIndex[row.op] = row.index;
    os << "digraph \"" << escape(func.getSymName()) << "\" {\n";
    os << "  label=\"@" << escape(func.getSymName()) << " — " << escape(moduleHeader(module))
       << "\\nblue f32, orange bf16, green f16, grey: casts inserted by autocast\";\n";
    os << "  labelloc=t; fontname=\"Helvetica\"; rankdir=TB;\n";
    os << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
    os << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
    DenseMap<Value, std::string> nodeOf;
    for (BlockArgument arg : func.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), AmpDialect::kNameAttr);
      auto role = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), AmpDialect::kRoleAttr);
      std::string id = "arg" + std::to_string(arg.getArgNumber());
      os << "  " << id << " [shape=ellipse, fillcolor=\"#ffffff\", label=\""
         << escape(name ? name.getValue() : StringRef(id)) << (role ? "\\n(" + role.getValue().str() + ")" : "")
         << "\\n" << escape(shortType(arg.getType())) << "\"];\n";
      nodeOf[arg] = id;
    }
    int castCounter = 0;
    func.walk([&](Operation* op) {
      if (op == func.getOperation()) return;
      std::string id;
      if (isa<func::ReturnOp>(op)) {
        id = "ret";
        os << "  ret [shape=doubleoctagon, fillcolor=\"#eeeeee\", label=\"return\"];\n";
      } else if (isInserted(op)) {
        id = "cast" + std::to_string(castCounter++);
        os << "  " << id << " [shape=box, style=\"filled\", fillcolor=\"#dddddd\", fontsize=8, "
           << "height=0.2, label=\"cast -> "
           << typeStr(cast<ShapedType>(op->getResult(0).getType()).getElementType()) << "\"];\n";
      } else {
        id = "op" + std::to_string(rowIndex.lookup(op));
        std::string precision = precisionOf(op);
        os << "  " << id << " [fillcolor=\"" << colour(precision) << "\", label=\"#"
           << rowIndex.lookup(op) << " " << escape(op->getName().getStringRef()) << "\\n"
           << escape(locationName(op->getLoc())) << "\\n" << precision << "\"];\n";
      }
      for (auto& operand : op->getOpOperands()) {
        auto it = nodeOf.find(operand.get());
        if (it == nodeOf.end()) continue;
        os << "  " << it->second << " -> " << id << " [label=\"" << escape(shortType(operand.get().getType()))
           << "\"];\n";
      }
      for (Value v : op->getResults()) nodeOf[v] = id;
    });
    os << "}\n";
  }
}
