// The enum-typed options of the ampc passes (PassEnums.td, plus the IR's LrScheduleKind) and their
// command-line spellings. Passes.td, the amp-pipeline options (Pipeline.h) and ampc's flags take
// the value lists from here, so a spelling is written once.
#ifndef AMP_PASSES_PASSENUMS_H
#define AMP_PASSES_PASSENUMS_H

#include <string>

#include "ir/AmpEnums.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"

#include "passes/PassEnums.h.inc"

namespace mlir::amp {

// llvm::cl::parser's enum parser, except that an unknown value is reported with the accepted ones
// ("'bogus' is not one of: dynamic, static, none, auto") instead of "Cannot find option named".
// The members mirror cl::parser's, which MLIR's pass options read (PassOptions::GenericOptionParser).
template <typename EnumT>
class EnumOptionParser : public llvm::cl::generic_parser_base {
 protected:
  class OptionInfo : public GenericOptionInfo {
   public:
    OptionInfo(llvm::StringRef name, EnumT v, llvm::StringRef helpStr)
        : GenericOptionInfo(name, helpStr), V(v) {}
    llvm::cl::OptionValue<EnumT> V;
  };
  llvm::SmallVector<OptionInfo, 8> Values;

 public:
  using parser_data_type = EnumT;
  explicit EnumOptionParser(llvm::cl::Option& o) : generic_parser_base(o) {}

  unsigned getNumOptions() const override { return unsigned(Values.size()); }
  llvm::StringRef getOption(unsigned n) const override { return Values[n].Name; }
  llvm::StringRef getDescription(unsigned n) const override { return Values[n].HelpStr; }
  const llvm::cl::GenericOptionValue& getOptionValue(unsigned n) const override { return Values[n].V; }

  // Returns true on error, as cl::parser does.
  bool parse(llvm::cl::Option& o, llvm::StringRef argName, llvm::StringRef arg, EnumT& v) {
    llvm::StringRef value = Owner.hasArgStr() ? arg : argName;
    for (const OptionInfo& info : Values)
      if (info.Name == value) {
        v = info.V.getValue();
        return false;
      }
    std::string accepted;
    for (const OptionInfo& info : Values) accepted += (accepted.empty() ? "" : ", ") + info.Name.str();
    return o.error("'" + value + "' is not one of: " + accepted);
  }

  template <typename DT>
  void addLiteralOption(llvm::StringRef name, const DT& v, llvm::StringRef helpStr) {
    Values.push_back(OptionInfo(name, static_cast<EnumT>(v), helpStr));
    llvm::cl::AddLiteralOption(Owner, name);
  }
  void removeLiteralOption(llvm::StringRef name) { Values.erase(Values.begin() + findOption(name)); }
};

// The spellings of each enum-typed option (the first spelling of a value is the one printed).
inline llvm::cl::ValuesClass autocastDtypeValues() {
  return llvm::cl::values(
      clEnumValN(AutocastDtype::F32, "f32", "autocast off: every op runs as declared"),
      clEnumValN(AutocastDtype::F16, "f16", "f16 where the policy allows low precision"),
      clEnumValN(AutocastDtype::BF16, "bf16", "bf16 where the policy allows low precision"),
      clEnumValN(AutocastDtype::Auto, "auto",
                 "from the target: bf16 where it computes in bf16, else f16 (CUDA) or f32"),
      clEnumValN(AutocastDtype::F16, "fp16", "same as f16"),
      clEnumValN(AutocastDtype::F32, "fp32", "same as f32"));
}
// amp-data-parallel: the precision gradients travel in (the IR's own Precision enum).
inline llvm::cl::ValuesClass reducePrecisionValues() {
  return llvm::cl::values(
      clEnumValN(Precision::F32, "f32", "the f32 gradients of the master weights, as DDP reduces them under autocast"),
      clEnumValN(Precision::BF16, "bf16", "halve the bytes: as DDP's bf16_compress_hook"),
      clEnumValN(Precision::F16, "f16", "halve the bytes: as DDP's fp16_compress_hook"));
}
inline llvm::cl::ValuesClass lossScalingModeValues() {
  return llvm::cl::values(
      clEnumValN(LossScalingMode::Dynamic, "dynamic",
                 "GradScaler: grows after growth-interval clean steps, backs off on overflow"),
      clEnumValN(LossScalingMode::Static, "static", "a fixed scale, init-scale"),
      clEnumValN(LossScalingMode::None, "none", "no scaling; a non-finite step is still skipped"),
      clEnumValN(LossScalingMode::Auto, "auto", "dynamic when @train_step computes in f16, else none"));
}
inline llvm::cl::ValuesClass optimizerKindValues() {
  return llvm::cl::values(clEnumValN(OptimizerKind::Sgd, "sgd", "torch.optim.SGD"),
                          clEnumValN(OptimizerKind::Adam, "adam", "torch.optim.Adam"),
                          clEnumValN(OptimizerKind::AdamW, "adamw", "torch.optim.AdamW"));
}
inline llvm::cl::ValuesClass lrScheduleKindValues() {
  return llvm::cl::values(
      clEnumValN(LrScheduleKind::Constant, "constant", "the base rate after the warmup"),
      clEnumValN(LrScheduleKind::Cosine, "cosine",
                 "cosine decay after the warmup, down to the final rate at total-steps"));
}

inline llvm::cl::ValuesClass weightCopyModeValues() {
  return llvm::cl::values(
      clEnumValN(WeightCopyMode::Auto, "auto",
                 "from the target: recast on cpu targets, stored on cuda targets"),
      clEnumValN(WeightCopyMode::Stored, "stored",
                 "state <param>.<dtype>, written by the optimizer step: no cast in the forward, "
                 "2 bytes per weight kept all the time"),
      clEnumValN(WeightCopyMode::Recast, "recast",
                 "cast the master before each use: the copy lives only around its GEMM"));
}

inline llvm::cl::ValuesClass optimizerStateTypeValues() {
  return llvm::cl::values(
      clEnumValN(OptimizerStateType::F32, "f32", "Adam's moments in f32, as PyTorch keeps them"),
      clEnumValN(OptimizerStateType::BF16, "bf16",
                 "Adam's moments in bf16, stored with stochastic rounding: 4 bytes per weight instead of 8"));
}

}  // namespace mlir::amp

namespace llvm::cl {
template <>
class parser<mlir::amp::AutocastDtype> : public mlir::amp::EnumOptionParser<mlir::amp::AutocastDtype> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::amp::LossScalingMode> : public mlir::amp::EnumOptionParser<mlir::amp::LossScalingMode> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::amp::OptimizerKind> : public mlir::amp::EnumOptionParser<mlir::amp::OptimizerKind> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::amp::WeightCopyMode> : public mlir::amp::EnumOptionParser<mlir::amp::WeightCopyMode> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::amp::OptimizerStateType> : public mlir::amp::EnumOptionParser<mlir::amp::OptimizerStateType> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::amp::LrScheduleKind> : public mlir::amp::EnumOptionParser<mlir::amp::LrScheduleKind> {
public:
  using EnumOptionParser::EnumOptionParser;
};
template <>
class parser<mlir::amp::Precision> : public mlir::amp::EnumOptionParser<mlir::amp::Precision> {
public:
  using EnumOptionParser::EnumOptionParser;
};
}  // namespace llvm::cl

#endif  // AMP_PASSES_PASSENUMS_H
