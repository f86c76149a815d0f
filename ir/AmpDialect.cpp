// Dialect registration, the #amp.init attribute and verification of the dialect's discardable
// attributes (argument roles, names, initialisers, precision annotations).
#include "ir/AmpDialect.h"

#include "ir/AmpOps.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::amp;

#include "ir/AmpDialect.cpp.inc"
#include "ir/AmpEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/AmpAttrs.cpp.inc"

void AmpDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/AmpOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/AmpAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #amp.init
//===----------------------------------------------------------------------===//

static bool isInitKind(StringRef kind) {
  return llvm::StringSwitch<bool>(kind)
      .Cases("zeros", "ones", "constant", "normal", "uniform", true)
      .Cases("xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "cast", true)
      .Default(false);
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef kind,
                               APFloat scale, int64_t seed, StringRef from) {
  if (!isInitKind(kind))
    return emitError() << "unknown initialiser kind '" << kind
                       << "' (expected zeros, ones, constant, normal, uniform, xavier_uniform, "
                          "xavier_normal, kaiming_uniform, kaiming_normal or cast)";
  if ((kind == "cast") != !from.empty())
    return emitError() << "initialiser kind 'cast' needs from = \"PARAM\", and only it takes one";
  if (!scale.isFinite()) return emitError() << "initialiser scale must be finite";
  if (seed < 0) return emitError() << "initialiser seed must be non-negative, got " << seed;
  return success();
}

Attribute InitAttr::parse(AsmParser& parser, Type) {
  std::string kind;
  if (parser.parseLess() || parser.parseKeywordOrString(&kind)) return {};
  double scale = 1.0;
  int64_t seed = 0;
  std::string from;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual()) return {};
    if (key == "scale") {
      if (parser.parseFloat(scale)) return {};
    } else if (key == "seed") {
      if (parser.parseInteger(seed)) return {};
    } else if (key == "from") {
      if (parser.parseString(&from)) return {};
    } else {
      parser.emitError(parser.getCurrentLocation(), "unknown #amp.init field '")
          << key << "' (expected scale, seed or from)";
      return {};
    }
  }
  if (parser.parseGreater()) return {};
  return InitAttr::getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                              parser.getContext(), kind, APFloat(scale), seed, from);
}

void InitAttr::print(AsmPrinter& printer) const {
  printer << "<" << getKind();
  if (!getScale().isExactlyValue(1.0)) printer << ", scale = " << getScale().convertToDouble();
  if (getSeed() != 0) printer << ", seed = " << getSeed();
  if (!getFrom().empty()) printer << ", from = \"" << getFrom() << "\"";
  printer << ">";
}

//===----------------------------------------------------------------------===//
// #amp.reason
//===----------------------------------------------------------------------===//

LogicalResult ReasonAttr::verify(function_ref<InFlightDiagnostic()> emitError, ReasonKind kind,
                                 StringRef policy, StringRef category, StringRef rule, StringRef source,
                                 StringRef detail) {
  // Each kind carries exactly the fields its sentence is built from.
  const bool hasPolicy = kind == ReasonKind::Policy, hasSource = kind == ReasonKind::Backward;
  const bool hasRule = kind == ReasonKind::Policy || kind == ReasonKind::Pass;
  auto fail = [&](StringRef field, bool wanted) {
    return emitError() << "#amp.reason<" << stringifyReasonKind(kind) << "> "
                       << (wanted ? "needs a non-empty " : "takes no ") << field;
  };
  if (hasPolicy != !policy.empty()) return fail("policy", hasPolicy);
  if (!hasPolicy && !category.empty()) return fail("category", false);
  if (!hasRule && !rule.empty()) return fail("rule", false);
  if (hasSource != !source.empty()) return fail("source", hasSource);
  if (hasSource != detail.empty()) return fail("detail", !hasSource);
  if (hasSource && !source.starts_with("amp."))
    return emitError() << "#amp.reason<backward> source must name an amp op, got \"" << source << "\"";
  return success();
}

ReasonAttr ReasonAttr::override(MLIRContext* ctx, StringRef detail) {
  return get(ctx, ReasonKind::Override, "", "", "", "", detail);
}
ReasonAttr ReasonAttr::off(MLIRContext* ctx, StringRef detail) {
  return get(ctx, ReasonKind::Off, "", "", "", "", detail);
}
ReasonAttr ReasonAttr::backward(MLIRContext* ctx, StringRef sourceOp) {
  return get(ctx, ReasonKind::Backward, "", "", "", sourceOp, "");
}
ReasonAttr ReasonAttr::pass(MLIRContext* ctx, StringRef rule, StringRef detail) {
  return get(ctx, ReasonKind::Pass, "", "", rule, "", detail);
}

std::string ReasonAttr::render() const {
  switch (getKind()) {
    case ReasonKind::Policy: {
      std::string s = getPolicy().str();
      if (!getCategory().empty()) s += " " + getCategory().str();
      if (!getRule().empty()) s += (getCategory().empty() ? ": " : ", ") + getRule().str();
      return s + ": " + getDetail().str();
    }
    case ReasonKind::Override: return "override: " + getDetail().str();
    case ReasonKind::Off: return "autocast off (dtype=f32): " + getDetail().str();
    case ReasonKind::Backward: return "backward of " + getSource().str();
    case ReasonKind::Pass:
      return getRule().empty() ? getDetail().str() : getRule().str() + ": " + getDetail().str();
  }
  return getDetail().str();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

static bool isIdentifierLike(StringRef s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
          c == '/'))
      return false;
  return true;
}

LogicalResult AmpDialect::verifyRegionArgAttribute(Operation* op, unsigned, unsigned argIndex,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == kRoleAttr) {
    auto role = dyn_cast<StringAttr>(attr.getValue());
    if (!role || !llvm::is_contained({"param", "input", "label", "buffer", "state"}, role.getValue()))
      return op->emitError() << "argument #" << argIndex
                             << ": amp.role must be \"param\", \"input\", \"label\", \"buffer\" or \"state\", got "
                             << attr.getValue();
    return success();
  }
  if (name == kNameAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || !isIdentifierLike(str.getValue()))
      return op->emitError() << "argument #" << argIndex
                             << ": amp.name must be a non-empty string of letters, digits and "
                                "'_', '.', '-', '/', got "
                             << attr.getValue();
    return success();
  }
  if (name == kInitAttr) {
    if (isa<InitAttr>(attr.getValue())) return success();
    // Stored initial values (an imported model's weights): an f32 tensor of the argument's type.
    auto values = dyn_cast<ElementsAttr>(attr.getValue());
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (values && function && argIndex < function.getNumArguments() &&
        values.getType() == function.getArgumentTypes()[argIndex] && values.getElementType().isF32())
      return success();
    return op->emitError() << "argument #" << argIndex
                           << ": amp.init must be an #amp.init<...> or f32 values of the argument's type";
  }
  if (name == kShardOfAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || !isIdentifierLike(str.getValue()))
      return op->emitError() << "argument #" << argIndex
                             << ": amp.shard_of must name the param whose chunk this state is, got "
                             << attr.getValue();
    return success();
  }
  return op->emitError() << "argument #" << argIndex << ": unknown amp argument attribute '"
                         << name << "' (expected amp.role, amp.name, amp.init or amp.shard_of)";
}

LogicalResult AmpDialect::verifyRegionResultAttribute(Operation* op, unsigned, unsigned resultIndex,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == kNameAttr || name == kGradOfAttr || name == kUpdatesAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || !isIdentifierLike(str.getValue()))
      return op->emitError() << "result #" << resultIndex << ": " << name
                             << " must name an argument or output (letters, digits, '_', '.', '-', "
                                "'/'), got "
                             << attr.getValue();
    return success();
  }
  return op->emitError() << "result #" << resultIndex << ": unknown amp result attribute '" << name
                         << "' (expected amp.name, amp.grad_of or amp.updates)";
}

LogicalResult AmpDialect::verifyOperationAttribute(Operation* op, NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == kPrecisionAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || !symbolizePrecision(str.getValue()))
      return op->emitError() << "amp.precision must be \"f32\", \"f16\" or \"bf16\", got "
                             << attr.getValue();
    return success();
  }
  if (name == kReasonAttr) {
    if (!isa<ReasonAttr>(attr.getValue()))
      return op->emitError() << "amp.reason must be an #amp.reason (e.g. #amp.reason<override, "
                                "detail = \"...\">), got "
                             << attr.getValue();
    return success();
  }
  if (name == kTargetAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "amp.target must be a string such as \"cpu\" or \"cuda:sm_90\"";
    return success();
  }
  if (name == kEntryAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || !isa<func::FuncOp>(op) || !isIdentifierLike(str.getValue()))
      return op->emitError() << "amp.entry must be a string naming the entry point of a func.func "
                                "(e.g. \"train_step\")";
    return success();
  }
  if (name == kAutocastAttr) {
    if (!isa<BoolAttr>(attr.getValue()))
      return op->emitError() << "amp.autocast must be a boolean (false disables autocast for the "
                                "function or region)";
    return success();
  }
  // The recipe (ir/Recipe.cpp verifies the values): module attributes set by the pass that decided.
  if (name == kDataParallelAttr) {
    if (!isa<DataParallelRecipeAttr>(attr.getValue()) || !isa<ModuleOp>(op))
      return op->emitError() << "amp.data_parallel is a #amp.data_parallel<...> attribute of the module (set by "
                                "amp-data-parallel: the training step reduces across ranks)";
    return success();
  }
  if (name == kLossScalingAttr) {
    if (!isa<LossScalingRecipeAttr>(attr.getValue()) || !isa<ModuleOp>(op))
      return op->emitError() << "amp.loss_scaling is a #amp.loss_scaling<...> attribute of the module (set by "
                                "amp-loss-scaling)";
    return success();
  }
  if (name == kOptimizerAttr) {
    if (!isa<OptimizerRecipeAttr>(attr.getValue()) || !isa<ModuleOp>(op))
      return op->emitError() << "amp.optimizer is a #amp.optimizer<...> attribute of the module (set by "
                                "amp-optimizer)";
    return success();
  }
  if (name == kAutocastInsertedAttr) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<CastOp>(op))
      return op->emitError() << "amp.autocast_inserted is a unit attribute of amp.cast (marks "
                                "casts inserted by amp-autocast)";
    return success();
  }
  if (name == kOriginAttr) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || !symbolizeOrigin(str.getValue()))
      return op->emitError() << "amp.origin must name the training pass that inserted the op "
                                "(\"loss_scaling\", \"optimizer\", \"accumulate\", \"data_parallel\", "
                                "\"shard_optimizer\" or \"remat\"), got "
                             << attr.getValue();
    return success();
  }
  return op->emitError() << "unknown amp attribute '" << name << "'";
}
