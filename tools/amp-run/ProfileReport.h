// amp-run --profile: an entry's device time by category, as one table.
#ifndef AMP_TOOLS_AMPRUN_PROFILEREPORT_H
#define AMP_TOOLS_AMPRUN_PROFILEREPORT_H

#include <string>

#include "runtime/exec/Executor.h"

// Prints `profile` of entry `entry`; `clocked` false (the dry run) prints operation counts only.
void printProfile(const std::string& entry, const amp::rt::EntryProfile& profile, bool clocked);

#endif  // AMP_TOOLS_AMPRUN_PROFILEREPORT_H
