// The execution plan: what codegen produces and every executor runs. A plan is a set of typed
// buffers plus entry points, each a list of steps over buffer ids. docs/plan-format.md documents
// it and its serialised form inside a bundle.
#ifndef AMP_RUNTIME_PLAN_PLAN_H
#define AMP_RUNTIME_PLAN_PLAN_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/Tensor.h"
#include "runtime/plan/Attr.h"
#include "runtime/plan/OpAttrs.h"
#include "runtime/plan/OpCode.h"
#include "runtime/plan/TrainingConfig.h"

namespace amp::rt {

// Bumped whenever a reader of the previous version would misread a bundle.
// 2: typed step kinds, fused regions with their bodies, native code objects.
// 3: each entry's memory layout (arena offsets, views, in-place updates).
inline constexpr int kPlanFormatVersion = 3;

enum class BufferKind {
  Param,     // trainable FP32 master weight; bound by name, initialised from its InitSpec
  State,     // persistent runtime state (optimizer moments, loss scale, counters)
  Input,     // data fed per call, bound by name
  Label,     // labels fed per call, bound by name
  Constant,  // immutable data stored in the bundle
  Temp,      // produced and consumed inside one entry point
};
std::string_view bufferKindName(BufferKind k);
std::optional<BufferKind> parseBufferKind(std::string_view s);

// How a param is initialised: the IR's #amp.init, or (kind "stored") the values the IR's amp.init
// holds as a tensor, such as an imported model's trained weights; the bundle stores them.
struct InitSpec {
  std::string kind;  // zeros ones constant normal uniform xavier_* kaiming_* cast stored
  double scale = 1.0;
  int64_t seed = 0;
  std::string from;  // kind "cast": the param whose initial value is rounded to this buffer's type
  std::shared_ptr<const Tensor> stored;  // kind "stored": f32 values of the buffer's shape
};

struct BufferDesc {
  std::string name;  // amp.name for params/inputs/labels; "%N" for temporaries
  DType dtype = DType::F32;
  Shape shape;
  BufferKind kind = BufferKind::Temp;
  std::optional<InitSpec> init;  // params only
  // ZeRO-1 state (amp.shard_of): this rank's chunk of the optimizer state of the param so named,
  // ceil(numel / N) elements of a job of N = metadata "shard_world_size" ranks.
  std::string shardOf;

  int64_t numel() const { return numElements(shape); }
  // Bytes of the buffer; validatePlan has checked that this does not overflow.
  int64_t byteSize() const { return numel() * static_cast<int64_t>(dtypeSize(dtype)); }
};

// What a step is, for executors: a library call (GEMM, conv, softmax, norms, losses, reductions,
// embedding), a generated fused kernel, a multi-tensor scaler/optimizer kernel, an alias (a view
// of its operand, no work), or a single elementwise/shape op. The op's ODS trait says which
// (ir/AmpBase.td, Amp_StepKindTrait; stepKindOf); a bundle whose kind disagrees with its op is
// refused.
enum class StepKind { Op, Library, Fused, MultiTensor, Alias };
std::string_view stepKindName(StepKind k);
std::optional<StepKind> parseStepKind(std::string_view s);

// What the dialect's ODS says of an op, generated into runtime/plan/OpSchema.inc: its step kind
// and arity (a max of -1: variadic).
struct OpSchema {
  StepKind kind;
  int minOperands, maxOperands, minResults, maxResults, regions, attributes;
};
const OpSchema& opSchema(OpCode code);
StepKind stepKindOf(OpCode code);
// Whether `decoded` holds the attributes of op `code` (its struct; monostate for an op without).
bool attrsDecodedFor(const OpAttrs& decoded, OpCode code);
StepKind stepKindOf(std::string_view op);  // Op for a name the dialect does not define

struct LocalValue {
  DType dtype = DType::F32;
  Shape shape;
};

struct PlanStep {
  std::string op;  // dialect op name, e.g. "amp.matmul"
  std::vector<int32_t> operands;
  std::vector<int32_t> results;
  AttrMap attrs;   // every inherent attribute, defaults included
  std::string loc;  // source location, for error messages ("mlp.mlir:12:9")
  // Where the step comes from: "forward", "backward" (a gradient) or "update" (unscale/check,
  // clipping, the optimizer and the scaler). Empty in plans without it (format 3 allows that).
  std::string phase;
  StepKind kind = StepKind::Op;
  // Fused steps (op "amp.fused", attr "kernel" names the generated function): the region body.
  // Local values are numbered: [0, operands.size()) are the step's operands, then the results
  // of each body step in order; body steps refer to locals, `locals` types every one of them, and
  // `yields` lists the locals that become the step's results.
  std::vector<PlanStep> body;
  std::vector<LocalValue> locals;
  std::vector<int32_t> yields;
  // `op` resolved, so devices dispatch on the enum, never on the name: set by the bundle reader
  // and by decodeSteps (runtime/plan/PlanValidation.h), which Session::create runs on every
  // plan. Empty only for a device's own pseudo-steps and for a name the dialect does not define.
  // Last, so that brace-initialised steps stay valid.
  std::optional<OpCode> code;
  // `attrs` decoded into the op's struct (runtime/plan/OpAttrs.h), set with `code` by decodeSteps;
  // devices read it through attrsOf<...Attrs>(), never by attribute name.
  OpAttrs decoded;

  // The decoded attributes of this step's op; `A` must be the struct of `code`, which decodeSteps
  // has made so for every step of a session's plan (a device reading another op's struct is a bug).
  template <typename A>
  const A& attrsOf() const {
    const A* a = std::get_if<A>(&decoded);
    if (a == nullptr) abortUndecoded(A::kCode);
    return *a;
  }
  // The same for a step that may not have been through decodeSteps (a plan a test built in
  // memory): decoded now, with the decoder's error when the attributes are wrong.
  template <typename A>
  absl::StatusOr<A> typedAttrs() const {
    if (const A* a = std::get_if<A>(&decoded)) return *a;
    return A::decode(attrs);
  }
  [[noreturn]] void abortUndecoded(OpCode wanted) const;

  // For code several ops share (softmax and log_softmax, a forward op and its gradient): `f`
  // applied to the attributes of whichever of `A, Rest...` this step is (the last when it is none
  // of the others), decoded as typedAttrs does.
  template <typename A, typename... Rest, typename F>
  auto withAttrsOf(F&& f) const -> absl::StatusOr<std::decay_t<decltype(f(std::declval<const A&>()))>> {
    if constexpr (sizeof...(Rest) > 0) {
      if (!is(A::kCode)) return withAttrsOf<Rest...>(std::forward<F>(f));
    }
    absl::StatusOr<A> a = typedAttrs<A>();
    if (!a.ok()) return a.status();
    return f(*a);
  }

  // Whether this step is op `c`: by `code`, or for a step built in memory before decodeSteps
  // (a test's plan), by resolving its name here. Code outside the bundle reader never compares
  // `op` itself.
  bool is(OpCode c) const { return (code ? code : opCodeOf(op)) == c; }
};

// Native code generated for the plan's fused kernels, with its SHA-256 so a corrupted bundle is
// refused before loading: for cpu targets one x86 shared object per ISA level ("x86-64-v3",
// "x86-64-v4"; format "so"), for cuda targets a cubin and the PTX of the GPU architecture
// ("sm_90"; formats "cubin" and "ptx"). Stored as the bundle tensor "code/<isa>.<format>".
struct CodeObject {
  std::string isa;
  std::string sha256;  // lowercase hex of the bytes
  std::vector<uint8_t> bytes;
  std::string format = "so";  // "so", "cubin" or "ptx"

  std::string tensorName() const { return "code/" + isa + "." + format; }
};

// Where an entry's temporaries live, decided by ampc's memory planner (runtime/plan/MemoryPlan.h)
// and stored in the bundle. Devices never trust it blindly: adoptMemoryLayout
// (runtime/plan/MemoryLayout.h) checks it against the entry before anything is allocated.
struct MemoryLayout {
  int64_t arenaBytes = 0;
  int64_t alignment = 0;  // of the arena and of every offset
  std::vector<std::pair<int32_t, int64_t>> offsets;  // temporary -> byte offset in the arena
  // (view, source): the view takes its source's storage (a reshape, or an elementwise result
  // written over an operand that dies at its step). In step order.
  std::vector<std::pair<int32_t, int32_t>> views;
  // (update source, persistent target): the source is computed straight into the target.
  std::vector<std::pair<int32_t, int32_t>> inPlaceUpdates;
};

struct EntryPoint {
  std::string name;                      // "eval", "train_step", ...
  std::vector<int32_t> results;          // buffers returned, in order
  std::vector<std::string> resultNames;  // from amp.name: "loss", "logits", ...
  std::vector<PlanStep> steps;
  // (source, target): after every step has run, the value of buffer `source` becomes the new
  // value of persistent buffer `target` (a param or state). All-or-nothing per call.
  std::vector<std::pair<int32_t, int32_t>> updates;
  // Absent in plans built in memory (tests, tools): devices then plan the entry themselves.
  std::optional<MemoryLayout> memory;
};

struct Plan {
  int version = kPlanFormatVersion;
  std::vector<std::pair<std::string, std::string>> metadata;  // precision, target, source, ...
  std::vector<BufferDesc> buffers;
  std::vector<EntryPoint> entries;
  std::vector<CodeObject> code;  // empty: fused kernels are interpreted from their bodies

  const EntryPoint* findEntry(std::string_view name) const;
  std::optional<int32_t> findBuffer(std::string_view name) const;
  std::string metadataValue(std::string_view key) const;
  // The metadata decoded (runtime/plan/TrainingConfig.h); the bundle reader has validated it,
  // so only a plan built in memory with bad metadata gets an error.
  absl::StatusOr<TrainingConfig> trainingConfig() const;
};

// The state the model itself declares, its buffers (batch norm running statistics), as opposed to
// the state training adds (optimizer moments, low-precision weight copies, the scaler and the
// counters): the state buffers a step of the eval entry reads, weight copies (init "cast")
// excepted. With params, what a PyTorch state_dict holds. Ids in buffer order; none without eval.
std::vector<int32_t> modelBufferIds(const Plan& plan);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_PLAN_H
