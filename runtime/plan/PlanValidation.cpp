#include "runtime/plan/PlanValidation.h"

#include <algorithm>
#include <sys/resource.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace amp::rt {

namespace {

// Non-negative dims whose element count and byte size stay within kMaxBufferBytes (so numElements
// and byte counts of the value cannot overflow). `what` names it in the error.
absl::Status validateValueSize(const std::string& what, DType dtype, const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(what, " has a negative dimension"));
    if (d != 0 && n > kMaxBufferBytes / d)
      return absl::InvalidArgumentError(absl::StrCat(what, " ", shapeToString(shape),
                                                     " is larger than the runtime's limit of ", kMaxBufferBytes,
                                                     " bytes"));
    n *= d;
  }
  if (n > kMaxBufferBytes / static_cast<int64_t>(dtypeSize(dtype)))
    return absl::InvalidArgumentError(absl::StrCat(what, " ", shapeToString(shape),
                                                   " is larger than the runtime's limit of ", kMaxBufferBytes,
                                                   " bytes"));
  return absl::OkStatus();
}

}  // namespace

absl::Status validateBuffers(const Plan& plan) {
  for (const BufferDesc& b : plan.buffers)
    if (absl::Status s = validateValueSize(absl::StrCat("buffer '", b.name, "'"), b.dtype, b.shape); !s.ok()) return s;
  return validateShardedState(plan);
}

// Sharded state is a chunk of a param's shape over the world size the bundle was compiled for.
absl::Status validateShardedState(const Plan& plan) {
  auto config = plan.trainingConfig();
  if (!config.ok()) return config.status();
  const int64_t ranks = config->shardWorldSize;
  for (const BufferDesc& b : plan.buffers) {
    if (b.shardOf.empty()) continue;
    if (b.kind != BufferKind::State || ranks == 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "buffer '", b.name, "': only state of a bundle with metadata shard_world_size may be sharded"));
    std::optional<int32_t> of = plan.findBuffer(b.shardOf);
    if (!of || plan.buffers[*of].kind != BufferKind::Param)
      return absl::InvalidArgumentError(
          absl::StrCat("buffer '", b.name, "' is sharded from '", b.shardOf, "', which is not a param"));
    const int64_t chunk = (plan.buffers[*of].numel() + ranks - 1) / ranks;
    if (b.shape != Shape{chunk} || b.dtype != plan.buffers[*of].dtype)
      return absl::InvalidArgumentError(absl::StrCat("buffer '", b.name, "' ", shapeToString(b.shape),
                                                     " must be the chunk [", chunk, "] of param '", b.shardOf,
                                                     "' over ", ranks, " ranks"));
  }
  return absl::OkStatus();
}

int64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || size <= 0) return kMaxBufferBytes;
  return static_cast<int64_t>(pages) * size;
}

int64_t addressSpaceLimitBytes() {
  int64_t limit = INT64_MAX;
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit rl;
    if (getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < uint64_t(limit))
      limit = static_cast<int64_t>(rl.rlim_cur);
  }
  return limit;
}

int64_t availableMemoryBytes() { return std::min(physicalMemoryBytes(), addressSpaceLimitBytes()); }

absl::Status validateMemory(const Plan& plan, int64_t limitBytes) {
  // A process limit (ulimit -v) makes allocations fail below the machine's memory: a limit
  // above it would let them fail later, as a crash.
  const int64_t processLimit = addressSpaceLimitBytes();
  const bool byProcessLimit = limitBytes <= 0 ? processLimit < physicalMemoryBytes() : processLimit < limitBytes;
  if (limitBytes <= 0) limitBytes = physicalMemoryBytes();
  limitBytes = std::min(limitBytes, processLimit);
  // Buffers are each below 2^36 bytes (validateBuffers), but their sum can still overflow.
  int64_t buffers = 0, arenas = 0;
  auto add = [](int64_t& sum, int64_t bytes) { return !__builtin_add_overflow(sum, bytes, &sum); };
  for (const BufferDesc& b : plan.buffers)
    if (b.kind != BufferKind::Temp && !add(buffers, b.byteSize()))
      return absl::InvalidArgumentError("the plan's buffers overflow a 64-bit byte count");
  for (const EntryPoint& e : plan.entries)
    if (e.memory && (e.memory->arenaBytes < 0 || !add(arenas, e.memory->arenaBytes)))
      return absl::InvalidArgumentError(absl::StrCat("entry '", e.name, "': arena size out of range"));
  int64_t total = 0;
  if (!add(total, buffers) || !add(total, arenas) || total > limitBytes)
    return absl::ResourceExhaustedError(absl::StrCat(
        "the plan needs ", buffers, " bytes of params, state, inputs and constants plus ", arenas,
        " bytes of arenas, more than the memory limit of ", limitBytes, " bytes (",
        byProcessLimit ? "the process's address-space limit, ulimit -v" : "--memory-limit", ")"));
  return absl::OkStatus();
}

absl::Status validateFusedBody(const Plan& plan, const PlanStep& step) {
  const size_t n = step.operands.size();
  if (step.locals.size() < n) return absl::InvalidArgumentError("the body has fewer locals than operands");
  // Every local, the body's own values included, within the buffers' limits: the iteration space
  // is one of them (validateFusedLayout counts its elements).
  for (size_t i = 0; i < step.locals.size(); ++i)
    if (absl::Status s = validateValueSize(absl::StrCat("local ", i), step.locals[i].dtype, step.locals[i].shape);
        !s.ok())
      return s;
  for (size_t i = 0; i < n; ++i) {
    const BufferDesc& b = plan.buffers[step.operands[i]];
    if (step.locals[i].dtype != b.dtype || step.locals[i].shape != b.shape)
      return absl::InvalidArgumentError(absl::StrCat("local ", i, " is not typed like operand buffer '", b.name, "'"));
  }
  size_t next = n;  // body results are numbered in order after the operands
  for (size_t k = 0; k < step.body.size(); ++k) {
    const PlanStep& inner = step.body[k];
    if (inner.is(OpCode::Fused) || !inner.body.empty())
      return absl::InvalidArgumentError(absl::StrCat("body op ", k, " nests a fused region"));
    for (int32_t id : inner.operands)
      if (id < 0 || static_cast<size_t>(id) >= next)
        return absl::InvalidArgumentError(absl::StrCat("body op ", k, " (", inner.op, ") reads local ", id,
                                                       " before it is defined"));
    for (int32_t id : inner.results)
      if (id < 0 || static_cast<size_t>(id) != next++)
        return absl::InvalidArgumentError(absl::StrCat("body op ", k, " (", inner.op, ") defines local ", id,
                                                       " out of order"));
  }
  if (next != step.locals.size())
    return absl::InvalidArgumentError(absl::StrCat("the body defines ", next, " locals but types ", step.locals.size()));
  if (step.yields.size() != step.results.size())
    return absl::InvalidArgumentError(absl::StrCat("the body yields ", step.yields.size(), " values for ",
                                                   step.results.size(), " results"));
  for (size_t r = 0; r < step.yields.size(); ++r) {
    const int32_t id = step.yields[r];
    const BufferDesc& b = plan.buffers[step.results[r]];
    if (id < 0 || static_cast<size_t>(id) >= step.locals.size() || step.locals[id].dtype != b.dtype ||
        step.locals[id].shape != b.shape)
      return absl::InvalidArgumentError(absl::StrCat("yield ", r, " is not typed like result buffer '", b.name, "'"));
  }
  return absl::OkStatus();
}

absl::Status validateFusedLayout(const PlanStep& step) {
  const bool hasRows = step.attrs.has("row_length"), hasReduced = step.attrs.has("reduced_results");
  if (!hasRows && !hasReduced) return absl::OkStatus();  // interpreted from its body alone
  if (!hasRows) return absl::InvalidArgumentError("reduced_results without a row_length");
  auto rowLength = step.attrs.getInt(step.op, "row_length");
  if (!rowLength.ok()) return rowLength.status();
  if (step.body.empty() || step.body[0].results.size() != 1 || step.results.empty())
    return absl::InvalidArgumentError("a fused step with a row_length needs a body and results");
  // The iteration space: the body's first (elementwise) value, typed by the validated locals.
  const Shape& space = step.locals[step.body[0].results[0]].shape;
  const int64_t n = numElements(space);
  if (*rowLength < 1 || *rowLength > std::max<int64_t>(n, 1) || (n > 0 && n % *rowLength != 0))
    return absl::InvalidArgumentError(
        absl::StrCat("row_length ", *rowLength, " does not divide the ", n, "-element iteration space"));
  // Results listed in "reduced_results" are column sums [row_length] of the iteration space.
  std::vector<char> reduced(step.results.size(), 0);
  if (hasReduced) {
    auto list = step.attrs.getInts(step.op, "reduced_results");
    if (!list.ok()) return list.status();
    if (list->empty()) return absl::InvalidArgumentError("reduced_results is empty (absent when nothing is reduced)");
    for (int64_t r : *list) {
      if (r < 0 || r >= static_cast<int64_t>(reduced.size()))
        return absl::InvalidArgumentError(absl::StrCat("reduced_results names result ", r, ", but the step has ",
                                                       reduced.size(), " results"));
      if (reduced[r]) return absl::InvalidArgumentError(absl::StrCat("reduced_results names result ", r, " twice"));
      reduced[r] = 1;
    }
    if (space.size() < 2 || space.back() != *rowLength)
      return absl::InvalidArgumentError("a fused step with reductions must have row_length = the iteration space's "
                                        "last dim");
  }
  for (size_t r = 0; r < step.yields.size(); ++r) {  // typed like the results (validateFusedBody)
    const Shape& shape = step.locals[step.yields[r]].shape;
    if (shape != (reduced[r] ? Shape{*rowLength} : space))
      return absl::InvalidArgumentError(absl::StrCat("fused result ", r, " ", shapeToString(shape),
                                                     " does not fit the ", shapeToString(space), " iteration space",
                                                     reduced[r] ? " reduced to its last dim" : ""));
  }
  return absl::OkStatus();
}

absl::Status validateEntryStructure(const Plan& plan, const EntryPoint& entry) {
  const int32_t count = static_cast<int32_t>(plan.buffers.size());
  auto where = [&](size_t s) {
    const PlanStep& step = entry.steps[s];
    return absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", "entry '", entry.name, "' step ", s, " (",
                        step.op, ")");
  };
  std::vector<char> written(plan.buffers.size(), 0);
  for (int32_t i = 0; i < count; ++i) written[i] = plan.buffers[i].kind != BufferKind::Temp;
  for (size_t s = 0; s < entry.steps.size(); ++s) {
    const PlanStep& step = entry.steps[s];
    for (int32_t id : step.operands) {
      if (id < 0 || id >= count)
        return absl::InvalidArgumentError(absl::StrCat(where(s), ": operand buffer id ", id, " is out of range"));
      if (!written[id])
        return absl::InvalidArgumentError(
            absl::StrCat(where(s), ": operand buffer '", plan.buffers[id].name, "' is read before it is written"));
    }
    for (int32_t id : step.results) {
      if (id < 0 || id >= count)
        return absl::InvalidArgumentError(absl::StrCat(where(s), ": result buffer id ", id, " is out of range"));
      if (plan.buffers[id].kind != BufferKind::Temp)
        return absl::InvalidArgumentError(absl::StrCat(where(s), ": result buffer '", plan.buffers[id].name,
                                                       "' is a ", std::string(bufferKindName(plan.buffers[id].kind)),
                                                       ", not a temporary"));
      if (written[id])
        return absl::InvalidArgumentError(
            absl::StrCat(where(s), ": result buffer '", plan.buffers[id].name, "' is written twice"));
      written[id] = 1;
    }
    if (step.is(OpCode::Fused)) {
      absl::Status status = validateFusedBody(plan, step);
      if (status.ok()) status = validateFusedLayout(step);
      if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(where(s), ": ", status.message()));
    }
  }
  if (entry.resultNames.size() != entry.results.size())
    return absl::InvalidArgumentError(absl::StrCat("entry '", entry.name, "' has ", entry.results.size(),
                                                   " results but ", entry.resultNames.size(), " result names"));
  for (int32_t id : entry.results)
    if (id < 0 || id >= count || !written[id])
      return absl::InvalidArgumentError(
          absl::StrCat("entry '", entry.name, "' returns buffer id ", id, ", which nothing writes"));
  std::vector<char> targeted(plan.buffers.size(), 0);
  for (const auto& [from, to] : entry.updates) {
    if (from < 0 || from >= count || !written[from] || to < 0 || to >= count)
      return absl::InvalidArgumentError(
          absl::StrCat("entry '", entry.name, "' has an update [", from, ", ", to, "] with an invalid buffer id"));
    const BufferDesc &src = plan.buffers[from], &dst = plan.buffers[to];
    if (dst.kind != BufferKind::Param && dst.kind != BufferKind::State)
      return absl::InvalidArgumentError(absl::StrCat("entry '", entry.name, "' updates '", dst.name,
                                                     "', which is not a param or state buffer"));
    if (src.dtype != dst.dtype || src.shape != dst.shape)
      return absl::InvalidArgumentError(absl::StrCat("entry '", entry.name, "' updates '", dst.name,
                                                     "' from a buffer of another type"));
    if (targeted[to])
      return absl::InvalidArgumentError(absl::StrCat("entry '", entry.name, "' updates '", dst.name, "' twice"));
    targeted[to] = 1;
  }
  return absl::OkStatus();
}

namespace {

// `code`, `kind` and `decoded` of one step from its op name and attributes; the arity the op's ODS
// declares. `where` names the step in errors.
absl::Status decodeStep(PlanStep& step, const std::string& where) {
  auto fail = [&](const auto&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", where, parts...));
  };
  step.code = opCodeOf(step.op);
  if (!step.code) return fail("'", step.op, "' is not an amp op");
  const OpSchema& schema = opSchema(*step.code);
  step.kind = schema.kind;
  auto outside = [](size_t n, int lo, int hi) { return n < size_t(lo) || (hi >= 0 && n > size_t(hi)); };
  auto range = [](int lo, int hi) {
    return hi < 0 ? absl::StrCat("at least ", lo) : lo == hi ? absl::StrCat(lo) : absl::StrCat(lo, " to ", hi);
  };
  if (outside(step.operands.size(), schema.minOperands, schema.maxOperands))
    return fail(step.op, " takes ", range(schema.minOperands, schema.maxOperands), " operands, not ",
                step.operands.size());
  if (outside(step.results.size(), schema.minResults, schema.maxResults))
    return fail(step.op, " has ", range(schema.minResults, schema.maxResults), " results, not ", step.results.size());
  auto decoded = decodeOpAttrs(*step.code, step.attrs);
  if (!decoded.ok()) return fail(decoded.status().message());
  step.decoded = *std::move(decoded);
  return absl::OkStatus();
}

}  // namespace

absl::Status decodeSteps(Plan& plan) {
  for (EntryPoint& entry : plan.entries) {
    for (size_t s = 0; s < entry.steps.size(); ++s) {
      PlanStep& step = entry.steps[s];
      const std::string where = absl::StrCat("entry '", entry.name, "' step ", s, ": ");
      if (absl::Status status = decodeStep(step, where); !status.ok()) return status;
      for (PlanStep& inner : step.body)
        if (absl::Status status = decodeStep(inner, where + "fused body: "); !status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace amp::rt
