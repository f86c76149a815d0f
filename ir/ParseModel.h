// Parsing a model file for ampc (and the fuzzers, which test what ampc does): MLIR's parser,
// then a check for attributes MLIR 19 builds corrupt, then the verifier. Header-only: it needs
// MLIRParser, which the tools link and the dialect library does not.
//
// The MLIR 19 bug (found by fuzz/pipeline.cpp; `mlir-opt` crashes the same way): `array<i1: 0, 1>`
// (integer literals in a bool array; `array<i1: false, true>` is fine) parses into a
// DenseArrayAttr that records two elements but stores no bytes, and printing it, as the
// verifier does in any diagnostic about its op, reads through a null pointer.
#ifndef AMP_IR_PARSEMODEL_H
#define AMP_IR_PARSEMODEL_H

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

namespace mlir::amp {

// The first DenseArrayAttr in `op`'s attributes whose stored bytes do not cover its elements.
inline DenseArrayAttr findCorruptDenseArray(Operation* op) {
  DenseArrayAttr bad;
  op->getAttrDictionary().walk([&](DenseArrayAttr a) {
    Type e = a.getElementType();
    const size_t bytes = e.isInteger(1) ? 1 : (e.getIntOrFloatBitWidth() + 7) / 8;
    if (!bad && a.getRawData().size() != static_cast<size_t>(a.size()) * bytes) bad = a;
  });
  return bad;
}

// Null after a located diagnostic (through the context's handler).
inline OwningOpRef<ModuleOp> parseModel(const llvm::SourceMgr& sources, MLIRContext* ctx) {
  ParserConfig config(ctx, /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, config);
  if (!module) return nullptr;
  bool corrupt = false;
  module->walk([&](Operation* op) {
    if (corrupt || !findCorruptDenseArray(op)) return;
    corrupt = true;
    // The op itself must not be printed: that is what crashes.
    emitError(op->getLoc()) << "'" << op->getName() << "': an array<i1: ...> attribute must list true/false, "
                            << "not integers (MLIR 19 misreads integer literals in bool arrays)";
  });
  if (corrupt || failed(verify(*module))) return nullptr;
  return module;
}

inline OwningOpRef<ModuleOp> parseModel(llvm::StringRef text, llvm::StringRef name, MLIRContext* ctx) {
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
  return parseModel(sources, ctx);
}

}  // namespace mlir::amp

#endif  // AMP_IR_PARSEMODEL_H
