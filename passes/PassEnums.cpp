// stringify/symbolize of the pass option enums (generated from PassEnums.td).
#include "passes/PassEnums.h"

#include "llvm/ADT/StringSwitch.h"

#include "passes/PassEnums.cpp.inc"
