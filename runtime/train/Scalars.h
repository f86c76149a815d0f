// One number read out of a tensor: an entry's scalar result (the eval loss) or a scalar state
// buffer of a session (the loss scale, the skipped-steps counter).
#ifndef AMP_RUNTIME_TRAIN_SCALARS_H
#define AMP_RUNTIME_TRAIN_SCALARS_H

#include <optional>
#include <string>

#include "runtime/Tensor.h"
#include "runtime/exec/Session.h"

namespace amp::rt {

// The first element of a float or integer (i32, i64) tensor; 0 for other dtypes.
double scalarOf(const Tensor& t);

// Persistent buffer `name` when the plan has it and it holds one element; none otherwise.
std::optional<double> persistentScalarIfAny(const Session& session, const std::string& name);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_SCALARS_H
