#include "codegen/emit/KernelEmitter.h"
#include "codegen/emit/BlockedSumText.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "runtime/plan/CodeRecords.h"
#include "runtime/plan/KernelBinding.h"
#include "runtime/schema/KernelTable.h"

namespace amp::codegen {
namespace {

using rt::DType;

std::string v(int32_t id) { return "v" + std::to_string(id); }

bool floatLike(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

std::string loadExpr(DType t, const std::string& e) {
  switch (t) {
    case DType::F32: return e;
    case DType::BF16: return "amp_ld_bf16(" + e + ")";
    case DType::F16: return "amp_ld_f16(" + e + ")";
    default: return "(" + e + " != 0)";
  }
}

// Rounds an f32 value to the precision of `t` (kept as float): every body value carries exactly
// the value its unfused op would have stored.
std::string roundExpr(DType t, const std::string& value) {
  switch (t) {
    case DType::BF16: return "amp_rn_bf16(" + value + ")";
    case DType::F16: return "amp_rn_f16(" + value + ")";
    default: return value;
  }
}

InputAccess classify(const rt::Shape& in, const rt::Shape& space, bool rowBroadcasts, bool& ok) {
  ok = true;
  if (in == space) return {};
  int64_t n = rt::numElements(in);
  if (n == 1) return {InputAccess::Scalar, 1};
  size_t lead = 0;
  while (lead < in.size() && in[lead] == 1) ++lead;
  size_t k = in.size() - lead;
  if (k <= space.size() && std::equal(in.begin() + lead, in.end(), space.end() - k))
    return {InputAccess::Suffix, n};
  // An outer broadcast ([M, 1] against [M, N]: a per-row value): right-aligned, the input is the
  // space's leading dims followed by ones, so element = i / (the space's trailing elements).
  if (rowBroadcasts && in.size() <= space.size()) {
    rt::Shape padded(space.size() - in.size(), 1);
    padded.insert(padded.end(), in.begin(), in.end());
    size_t kept = padded.size();
    while (kept > 0 && padded[kept - 1] == 1) --kept;
    if (kept < padded.size() && std::equal(padded.begin(), padded.begin() + kept, space.begin())) {
      const int64_t divisor = rt::numElements(rt::Shape(space.begin() + kept, space.end()));
      if (divisor > 1) return {InputAccess::Outer, divisor};
    }
    // One run of broadcast dims between equal leading and trailing dims ([A, 1, C] against
    // [A, B, C]): the leading part may be empty only if the run is not the whole prefix (a Suffix).
    size_t first = 0;
    while (first < padded.size() && padded[first] == space[first]) ++first;
    size_t last = first;
    while (last < padded.size() && padded[last] == 1 && space[last] != 1) ++last;
    if (first < last && last < padded.size() &&
        std::equal(padded.begin() + last, padded.end(), space.begin() + last)) {
      const int64_t inner = rt::numElements(rt::Shape(space.begin() + last, space.end()));
      const int64_t run = rt::numElements(rt::Shape(space.begin() + first, space.begin() + last));
      InputAccess middle{InputAccess::Middle, run * inner};
      middle.inner = inner;
      return middle;
    }
  }
  ok = false;
  return {};
}

const char* comparisonOperator(rt::ComparePredicate predicate) {
  switch (predicate) {
    case rt::ComparePredicate::Eq: return "==";
    case rt::ComparePredicate::Ne: return "!=";
    case rt::ComparePredicate::Lt: return "<";
    case rt::ComparePredicate::Le: return "<=";
    case rt::ComparePredicate::Gt: return ">";
    case rt::ComparePredicate::Ge: return ">=";
  }
  return "";
}

// The f32 formula of a body op over its operand values: the reference's, evaluated the same way
// (docs/reference-executor.md), so results are bit-identical. Attributes are read through the
// op's generated struct (runtime/plan/OpAttrs.h), which validates them as the ODS declares.
bool formula(const rt::PlanStep& op, const std::vector<std::string>& a, std::string& out, std::string& error) {
  using rt::OpCode;
  auto dbl = [](const std::string& x) { return "(double)" + x; };
  const std::optional<OpCode> code = op.code ? op.code : rt::opCodeOf(op.op);
  if (!code) return error = "op " + op.op + " is not an amp op", false;
  switch (*code) {
    case OpCode::Add: out = a[0] + " + " + a[1]; return true;
    case OpCode::Sub: out = a[0] + " - " + a[1]; return true;
    case OpCode::Mul: out = a[0] + " * " + a[1]; return true;
    case OpCode::Div: out = a[0] + " / " + a[1]; return true;
    case OpCode::Maximum: out = "amp_max(" + a[0] + ", " + a[1] + ")"; return true;
    case OpCode::Minimum: out = "amp_min(" + a[0] + ", " + a[1] + ")"; return true;
    case OpCode::Pow: out = "(float)pow(" + dbl(a[0]) + ", " + dbl(a[1]) + ")"; return true;
    case OpCode::Neg: out = "-" + a[0]; return true;
    case OpCode::Abs: out = "fabsf(" + a[0] + ")"; return true;
    case OpCode::Exp: out = "(float)exp(" + dbl(a[0]) + ")"; return true;
    case OpCode::Log: out = "(float)log(" + dbl(a[0]) + ")"; return true;
    case OpCode::Sqrt: out = "sqrtf(" + a[0] + ")"; return true;
    case OpCode::Rsqrt: out = "(float)(1.0 / sqrt(" + dbl(a[0]) + "))"; return true;
    case OpCode::Reciprocal: out = "1.0f / " + a[0]; return true;
    case OpCode::Tanh: out = "(float)tanh(" + dbl(a[0]) + ")"; return true;
    case OpCode::Erf: out = "(float)erf(" + dbl(a[0]) + ")"; return true;
    case OpCode::Sigmoid: out = "(float)amp_sigmoid(" + dbl(a[0]) + ")"; return true;
    case OpCode::Relu: out = "((" + a[0] + " > 0.0f || isnan(" + a[0] + ")) ? " + a[0] + " : 0.0f)"; return true;
    case OpCode::Silu: out = "(float)(" + dbl(a[0]) + " * amp_sigmoid(" + dbl(a[0]) + "))"; return true;
    case OpCode::Gelu: {
      // An absent approximation is its ODS default, none, as the executors read it.
      absl::StatusOr<rt::GeluAttrs> attrs = op.typedAttrs<rt::GeluAttrs>();
      if (!attrs.ok()) return error = std::string(attrs.status().message()), false;
      out = (attrs->approximate == rt::GeluApproximation::Tanh ? "amp_gelu_tanh(" : "amp_gelu(") + dbl(a[0]) + ")";
      return true;
    }
    case OpCode::Compare: {
      absl::StatusOr<rt::CompareAttrs> attrs = op.typedAttrs<rt::CompareAttrs>();
      if (!attrs.ok()) return error = std::string(attrs.status().message()), false;
      out = "(" + a[0] + " " + comparisonOperator(attrs->predicate) + " " + a[1] + ")";
      return true;
    }
    case OpCode::Select: out = "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")"; return true;
    case OpCode::Cast: out = a[0]; return true;
    // A broadcast is its operand, read through the input's broadcast access (amp-fuse never puts
    // one in a region; a lone one becomes a CUDA kernel). Float values pass through f32 exactly;
    // only a signalling NaN comes out quiet, which the numeric contract exempts.
    case OpCode::BroadcastTo: out = a[0]; return true;
    default: break;
  }
  return error = "op " + op.op + " cannot be emitted in a fused kernel", false;
}

const char* kPrelude = R"(// Generated by ampc: fused elementwise kernels (docs/kernels.md). Each value is rounded to the
// type its unfused op has, so results equal the reference executor's bit for bit.
#include <math.h>
#include <string.h>

static inline unsigned amp_bits(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float amp_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline float amp_ld_bf16(unsigned short b) { return amp_float((unsigned)b << 16); }
static inline unsigned short amp_st_bf16(float x) {  // RNE; NaN made quiet, payload kept
  unsigned u = amp_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float amp_rn_bf16(float x) { return amp_ld_bf16(amp_st_bf16(x)); }
// F16C's conversions are bit-identical to the runtime's f16 conversions (docs/numerics.md).
// amp_cvtsh_ss and amp_cvtss_sh are <immintrin.h>'s _cvtsh_ss and _cvtss_sh as each compiler
// defines them (always inlined, as there, so the kernels' code stays the same), spelt out because
// parsing that header was most of the C++ compile of a model's kernels.
typedef short amp_v8hi __attribute__((vector_size(16)));
typedef float amp_v4sf __attribute__((vector_size(16)));
#if defined(__clang__)
static inline __attribute__((always_inline)) float amp_cvtsh_ss(unsigned short h) {
  return __builtin_ia32_vcvtph2ps((amp_v8hi){(short)h, 0, 0, 0, 0, 0, 0, 0})[0];
}
static inline __attribute__((always_inline)) unsigned short amp_cvtss_sh(float x) {
  return (unsigned short)((amp_v8hi)__builtin_ia32_vcvtps2ph((amp_v4sf){x, 0, 0, 0}, 0))[0];
}
#else
static inline __attribute__((always_inline)) float amp_cvtsh_ss(unsigned short h) {
  amp_v4sf f = __builtin_ia32_vcvtph2ps((amp_v8hi){(short)h, 0, 0, 0, 0, 0, 0, 0});
  return __builtin_ia32_vec_ext_v4sf(f, 0);
}
static inline __attribute__((always_inline)) unsigned short amp_cvtss_sh(float x) {
  amp_v8hi h = __builtin_ia32_vcvtps2ph((amp_v4sf){x, 0, 0, 0}, 0);
  return (unsigned short)__builtin_ia32_vec_ext_v8hi(h, 0);
}
#endif
static inline float amp_ld_f16(unsigned short h) { return amp_cvtsh_ss(h); }
static inline unsigned short amp_st_f16(float x) { return (unsigned short)amp_cvtss_sh(x); }
static inline float amp_rn_f16(float x) { return amp_cvtsh_ss(amp_cvtss_sh(x)); }
static inline float amp_max(float a, float b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
static inline float amp_min(float a, float b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}
static inline double amp_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static inline float amp_gelu(double x) { return (float)(0.5 * x * (1.0 + erf(x * 0.70710678118654752440))); }
static inline float amp_gelu_tanh(double x) {
  return (float)(0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))));
}
)";

}  // namespace

const char* storageType(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::BF16:
    case DType::F16: return "unsigned short";
    default: return "unsigned char";  // i1
  }
}

std::string loadStatement(int32_t value, DType t, const std::string& element) {
  return std::string("const ") + (t == DType::Bool ? "bool " : "float ") + v(value) + " = " + loadExpr(t, element) +
         ";";
}

std::string storeExpr(DType t, const std::string& value) {
  switch (t) {
    case DType::F32: return value;
    case DType::BF16: return "amp_st_bf16(" + value + ")";
    case DType::F16: return "amp_st_f16(" + value + ")";
    default: return "(unsigned char)(" + value + ")";
  }
}

std::string kernelSymbol(const std::string& kernel) {
  std::string s = "amp_";
  for (char c : kernel) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

KernelBody emitBody(const rt::Plan& plan, const rt::PlanStep& step, std::string& error, bool rowBroadcasts) {
  KernelBody k;
  const rt::AttrValue* name = step.attrs.find("kernel");
  const std::string* kernel = name ? std::get_if<std::string>(name) : nullptr;
  if (!kernel) return error = "fused step without a 'kernel' name", k;
  k.symbol = kernelSymbol(*kernel);
  if (step.results.empty() || step.body.empty()) return error = "fused step without results", k;
  // The iteration space: the shape of the body's elementwise values (the first op is one).
  if (step.body[0].results.size() != 1 || step.body[0].is(rt::OpCode::ReduceSum))
    return error = *kernel + ": the body must start with an elementwise op", k;
  const rt::Shape& space = step.locals[step.body[0].results[0]].shape;
  std::vector<int32_t> reducedLocal(step.locals.size(), -1);  // reduce result local -> summed local
  for (const rt::PlanStep& op : step.body)
    if (op.is(rt::OpCode::ReduceSum)) {
      if (op.operands.size() != 1 || op.results.size() != 1 || space.size() < 2 ||
          step.locals[op.operands[0]].shape != space || step.locals[op.results[0]].shape != rt::Shape{space.back()})
        return error = *kernel + ": a reduce_sum must sum a body value over all but its last dim", k;
      reducedLocal[op.results[0]] = op.operands[0];
    }
  for (size_t r = 0; r < step.results.size(); ++r) {
    const int32_t y = step.yields[r];
    if (reducedLocal[y] >= 0) {
      k.reductions.push_back({reducedLocal[y], static_cast<int32_t>(r), step.locals[y].dtype});
    } else if (plan.buffers[step.results[r]].shape != space) {
      return error = *kernel + ": results of different shapes", k;
    }
  }
  for (const rt::PlanStep& op : step.body)
    for (int32_t id : op.operands)
      if (id >= 0 && static_cast<size_t>(id) < reducedLocal.size() && reducedLocal[id] >= 0)
        return error = *kernel + ": a reduction may only be yielded", k;
  if (!k.reductions.empty()) {
    k.rowLength = space.back();
    k.rows = space.back() > 0 ? rt::numElements(space) / space.back() : 0;
  }
  for (const rt::LocalValue& l : step.locals)
    if (!floatLike(l.dtype) && l.dtype != DType::Bool)
      return error = *kernel + ": element type " + std::string(rt::dtypeName(l.dtype)) + " is not emitted", k;
  for (size_t i = 0; i < step.operands.size(); ++i) {
    bool ok;
    InputAccess access = classify(plan.buffers[step.operands[i]].shape, space, rowBroadcasts, ok);
    if (!ok) return error = *kernel + ": input " + std::to_string(i) + " does not broadcast by leading dims", k;
    if (access.kind == InputAccess::Suffix && k.reductions.empty()) k.rowLength = std::max(k.rowLength, access.period);
    k.inputs.push_back(access);
  }
  for (const InputAccess& a : k.inputs)
    if (a.kind == InputAccess::Suffix && k.rowLength % a.period != 0 && a.period % k.rowLength != 0)
      return error = *kernel + ": broadcast periods do not nest", k;
  for (size_t i = 0; i < step.operands.size(); ++i) {
    const DType t = step.locals[i].dtype;
    std::string ptr = "in" + std::to_string(i), index;
    switch (k.inputs[i].kind) {
      case InputAccess::Full: index = "i"; break;
      case InputAccess::Scalar: index = "0"; break;
      case InputAccess::Outer: index = "i / " + std::to_string(k.inputs[i].period); break;
      case InputAccess::Middle:
        index = "(i / " + std::to_string(k.inputs[i].period) + ") * " + std::to_string(k.inputs[i].inner) + " + i % " +
                std::to_string(k.inputs[i].inner);
        break;
      case InputAccess::Suffix:
        index = k.inputs[i].period == k.rowLength  ? "j"
                : k.rowLength % k.inputs[i].period == 0 ? "j % " + std::to_string(k.inputs[i].period)
                                                        : "i % " + std::to_string(k.inputs[i].period);
        break;
    }
    k.inputTypes.push_back(t);
    k.loads.push_back(loadStatement(static_cast<int32_t>(i), t, ptr + "[" + index + "]"));
  }
  for (const rt::PlanStep& op : step.body) {
    if (op.is(rt::OpCode::ReduceSum)) continue;  // accumulated by the column loop (reductions)
    if (op.results.size() != 1) return error = *kernel + ": body op " + op.op + " must have one result", k;
    std::vector<std::string> args;
    for (int32_t id : op.operands) args.push_back(v(id));
    std::string expr;
    if (!formula(op, args, expr, error)) return k;
    const int32_t r = op.results[0];
    const DType t = step.locals[r].dtype;
    k.compute.push_back(std::string("const ") + (t == DType::Bool ? "bool " : "float ") + v(r) + " = " +
                        (t == DType::Bool ? expr : roundExpr(t, expr)) + ";  // " + op.op);
  }
  for (size_t r = 0; r < step.yields.size(); ++r) {
    if (reducedLocal[step.yields[r]] >= 0) continue;
    const DType t = step.locals[step.yields[r]].dtype;
    k.elementStores.push_back({static_cast<int32_t>(r), step.yields[r], t});
    k.stores.push_back("out" + std::to_string(r) + "[i] = " + storeExpr(t, v(step.yields[r])) + ";");
  }
  return k;
}

KernelBody emitAnnotatedBody(const rt::Plan& plan, rt::PlanStep& step, std::string& error, bool rowBroadcasts) {
  KernelBody k = emitBody(plan, step, error, rowBroadcasts);
  if (!error.empty()) return k;
  step.attrs.set("row_length", k.rowLength);
  if (!k.reductions.empty()) {
    std::vector<int64_t> reduced;
    for (const KernelBody::Reduction& red : k.reductions) reduced.push_back(red.yield);
    step.attrs.set("reduced_results", reduced);
  }
  return k;
}

// The object's one export (runtime/schema/KernelTable.h): an entry per (kernel, region body), and
// the ISA level twice: in the table, and in an ELF note ("ampc", type 1) that amp-run reads from
// the object's bytes before loading it (runtime/plan/CodeRecords.h). ampc compiles with
// -DAMP_TARGET_ISA="<level>"; compiled without it the object records no level and is refused.
static std::string kernelTableSource(const std::set<std::pair<std::string, std::string>>& table) {
  std::ostringstream os;
  os << R"(
#ifndef AMP_TARGET_ISA
#define AMP_TARGET_ISA ""
#endif
__asm__(".pushsection .note.ampc.isa,\"a\",@note\n.balign 4\n.long 5\n.long 2f - 1f\n.long )"
     << rt::kIsaNoteType << R"(\n.asciz \"ampc\"\n.balign 4\n1: .asciz \"" AMP_TARGET_ISA "\"\n2: .balign 4\n.popsection\n");
)" << rt::kKernelTableDeclaration
     << "static const AmpKernelEntry amp_kernel_entries[] = {\n";
  for (const auto& [symbol, hash] : table) os << "  {\"" << symbol << "\", \"" << hash << "\", " << symbol << "},\n";
  if (table.empty()) os << "  {0, 0, 0},\n";  // C++ has no empty arrays; count says 0
  os << "};\nextern \"C\" __attribute__((visibility(\"default\"))) const AmpKernelTable " << rt::kKernelTableSymbol
     << " = {" << rt::kKernelTableVersion << ", " << table.size() << ", AMP_TARGET_ISA, amp_kernel_entries};\n";
  return os.str();
}

bool emitCpuSource(rt::Plan& plan, std::string& source, std::string& error) {
  std::ostringstream os;
  os << kPrelude;
  // Identical bodies (repeated layers, the forward and backward of one pattern) are emitted once:
  // the step's "symbol" attribute names the function that computes it.
  std::map<std::string, std::string> emitted;  // function text without its name -> symbol
  std::set<std::pair<std::string, std::string>> table;  // (symbol, body hash) of every step
  for (rt::EntryPoint& entry : plan.entries)
    for (rt::PlanStep& step : entry.steps) {
      if (!step.is(rt::OpCode::Fused)) continue;
      KernelBody k = emitAnnotatedBody(plan, step, error);
      if (!error.empty()) return false;
      std::ostringstream fn;
      fn << "(const unsigned char* const* in, unsigned char* const* out, long begin, long end) {\n";
      for (size_t i = 0; i < step.operands.size(); ++i)
        fn << "  const " << storageType(step.locals[i].dtype) << "* __restrict in" << i << " = (const "
           << storageType(step.locals[i].dtype) << "*)in[" << i << "];\n";
      for (size_t r = 0; r < step.yields.size(); ++r)
        fn << "  " << storageType(step.locals[step.yields[r]].dtype) << "* __restrict out" << r << " = ("
           << storageType(step.locals[step.yields[r]].dtype) << "*)out[" << r << "];\n";
      if (k.reductions.empty()) {
        fn << "  for (long row = begin; row < end; ++row) {\n"
           << "    for (long j = 0; j < " << k.rowLength << "; ++j) {\n"
           << "      const long i = row * " << k.rowLength << " + j;\n";
        for (const std::string& l : k.loads) fn << "      " << l << "\n";
        for (const std::string& c : k.compute) fn << "      " << c << "\n";
        for (const std::string& st : k.stores) fn << "      " << st << "\n";
        fn << "      (void)i;\n    }\n  }\n}\n";
      } else {
        // Columns [begin, end) in blocks of 256; every row in order, so each column sum is the
        // reference's reduce_sum: fl(...fl(fl(+0 + x0) + x1)...) over each block of rows, the
        // blocks added pairwise (BlockedSumText.h), rounded once at the end.
        const BlockedSumText blocked{k.rows, k.reductions.size(), "for (long j = j0; j < j1; ++j) ", "[j - j0]"};
        fn << "  for (long j0 = begin; j0 < end; j0 += 256) {\n"
           << "    const long j1 = j0 + 256 < end ? j0 + 256 : end;\n";
        for (size_t a = 0; a < k.reductions.size(); ++a)
          fn << "    float acc" << a << "[256];\n    for (long j = j0; j < j1; ++j) acc" << a << "[j - j0] = 0.0f;\n";
        if (blocked.needed()) fn << blocked.declare("    ", "[256]");
        fn << "    for (long row = 0; row < " << k.rows << "; ++row) {\n"
           << "      for (long j = j0; j < j1; ++j) {\n"
           << "        const long i = row * " << k.rowLength << " + j;\n";
        for (const std::string& l : k.loads) fn << "        " << l << "\n";
        for (const std::string& c : k.compute) fn << "        " << c << "\n";
        for (const std::string& st : k.stores) fn << "        " << st << "\n";
        for (size_t a = 0; a < k.reductions.size(); ++a)
          fn << "        acc" << a << "[j - j0] += " << v(k.reductions[a].source) << ";\n";
        fn << "        (void)i;\n      }\n";
        if (blocked.needed()) fn << blocked.closeBlock("      ");
        fn << "    }\n";
        if (blocked.needed()) fn << blocked.finish("    ");
        for (size_t a = 0; a < k.reductions.size(); ++a)
          fn << "    for (long j = j0; j < j1; ++j) out" << k.reductions[a].yield << "[j] = "
             << storeExpr(k.reductions[a].dtype, "acc" + std::to_string(a) + "[j - j0]") << ";\n";
        fn << "  }\n}\n";
      }
      auto [it, fresh] = emitted.emplace(fn.str(), k.symbol);
      step.attrs.set("symbol", it->second);
      // Internal linkage: the object exports the table below and nothing else a loader could find.
      if (fresh) os << "\nstatic void " << k.symbol << fn.str();
      table.emplace(it->second, rt::fusedBodyHash(step));
    }
  os << kernelTableSource(table);
  source = os.str();
  return true;
}

}  // namespace amp::codegen
