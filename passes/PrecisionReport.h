// The precision plan for people: a per-op report (text or JSON), the explanation of one op, and
// a Graphviz drawing coloured by precision. All read the annotations amp-autocast writes
// (amp.precision, amp.reason, amp.autocast_inserted) so they describe the IR as it is.
#ifndef AMP_PASSES_PRECISIONREPORT_H
#define AMP_PASSES_PRECISIONREPORT_H

#include <cstdint>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::amp {

// Forward FLOPs of one op (2*M*N*K for matmul, plus M*N for a linear's bias,
// 2*out*Cin/groups*KH*KW for conv2d, about one per element for elementwise ops, a few per
// element for softmax and norms, 0 for data movement and casts).
int64_t estimateFlops(Operation* op);

// Per function: a row per op (index, op, location, precision, inserted casts it needed,
// reason), then counts per precision, casts by direction and the FLOP share per precision.
void printPrecisionReport(ModuleOp module, llvm::raw_ostream& os, bool json = false);

// Explains every op whose location name matches `query` (exact or glob), whose op name is
// `query` ("amp.softmax"), whose file location starts with `query` ("model.mlir:12"), or whose
// report index is `query` ("#7" or "@func#7"). Fails with a message when nothing matches.
LogicalResult printExplanation(ModuleOp module, llvm::StringRef query, llvm::raw_ostream& os);

// A Graphviz digraph per function: arguments, ops coloured by precision, inserted casts as
// small grey nodes, edges labelled with their tensor types.
void printPrecisionDot(ModuleOp module, llvm::raw_ostream& os);

}  // namespace mlir::amp

#endif  // AMP_PASSES_PRECISIONREPORT_H
