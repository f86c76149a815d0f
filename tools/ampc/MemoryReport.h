// --emit=memory-report: bytes of every buffer class of the compiled plan, next to the same model
// compiled in f32, so the memory effect of mixed precision is measured, not assumed.
#ifndef AMP_TOOLS_AMPC_MEMORYREPORT_H
#define AMP_TOOLS_AMPC_MEMORYREPORT_H

#include <string>

#include "runtime/plan/Plan.h"

namespace amp::rt {

// `entry` selects whose temporaries count ("train_step" or "eval").
std::string renderMemoryReport(const Plan& f32, const Plan& amp, const std::string& entry);

}  // namespace amp::rt

#endif  // AMP_TOOLS_AMPC_MEMORYREPORT_H
