#include "runtime/devices/cuda/DryRunApi.h"

#include "runtime/devices/cuda/GpuMemory.h"

#include <cstdlib>
#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace amp::rt::cuda {

GpuInfo DryRunApi::h200() {
  GpuInfo g;
  g.name = "dry run (no GPU; an H200's limits)";
  g.ccMajor = 9;
  g.ccMinor = 0;
  g.driverVersion = 13000;
  g.multiprocessors = 132;
  g.memoryBytes = int64_t{143771} << 20;  // what nvidia-smi reports for an H200: 143771 MiB
  return g;
}

DryRunApi::DryRunApi(GpuInfo gpu) : gpu_(std::move(gpu)) {}

DryRunApi::~DryRunApi() {
  for (const auto& [p, bytes] : allocations_) std::free(reinterpret_cast<void*>(static_cast<uintptr_t>(p)));
}

absl::StatusOr<DevicePtr> DryRunApi::allocate(int64_t bytes) {
  if (capturing_) return refusedInCapture("allocate (cuMemAlloc)");
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation");
  if (gpu_.memoryBytes > 0 && deviceBytes_ + bytes > gpu_.memoryBytes)
    return gpuOutOfMemory(bytes, gpu_.memoryBytes - deviceBytes_, gpu_.memoryBytes);
  auto p = hostAllocate(bytes);
  if (p.ok()) {
    deviceBytes_ += bytes;
    deviceAllocations_.insert(*p);
  }
  return p;
}

absl::StatusOr<DevicePtr> DryRunApi::hostAllocate(int64_t bytes) {
  const size_t size = static_cast<size_t>((bytes + 255) / 256 * 256 + 256);
  void* p = std::aligned_alloc(256, size);
  if (!p) return absl::ResourceExhaustedError(absl::StrCat("dry run: cannot allocate ", bytes, " bytes"));
  std::memset(p, 0, size);
  const DevicePtr d = static_cast<DevicePtr>(reinterpret_cast<uintptr_t>(p));
  allocations_[d] = bytes;
  return d;
}

void DryRunApi::release(DevicePtr p) {
  if (capturing_) {  // the GPU invalidates the capture; endCapture reports it
    if (captureError_.ok()) captureError_ = refusedInCapture(deviceAllocations_.count(p) ? "release (cuMemFree)" : "releasePinned (cuMemFreeHost)");
    return;
  }
  auto it = allocations_.find(p);
  if (it == allocations_.end()) return;
  if (deviceAllocations_.erase(p)) deviceBytes_ -= it->second;
  allocations_.erase(it);
  std::free(reinterpret_cast<void*>(static_cast<uintptr_t>(p)));
}

absl::StatusOr<void*> DryRunApi::allocatePinned(int64_t bytes) {
  if (capturing_) return refusedInCapture("allocatePinned (cuMemHostAlloc)");
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation");
  auto p = hostAllocate(bytes);
  if (!p.ok()) return p.status();
  return reinterpret_cast<void*>(static_cast<uintptr_t>(*p));
}

void DryRunApi::releasePinned(void* p) { release(static_cast<DevicePtr>(reinterpret_cast<uintptr_t>(p))); }

bool DryRunApi::inside(DevicePtr p, int64_t bytes) const {
  auto it = allocations_.upper_bound(p);
  if (it == allocations_.begin()) return false;
  --it;
  return p >= it->first && bytes >= 0 && p - it->first + static_cast<uint64_t>(bytes) <= static_cast<uint64_t>(it->second);
}

bool DryRunApi::insideDevice(DevicePtr p, int64_t bytes) const {
  if (!inside(p, bytes)) return false;
  auto it = allocations_.upper_bound(p);
  return deviceAllocations_.count((--it)->first) > 0;
}

bool DryRunApi::pinned(const void* p, int64_t bytes) const {
  const DevicePtr address = static_cast<DevicePtr>(reinterpret_cast<uintptr_t>(p));
  return inside(address, bytes) && !insideDevice(address, bytes);
}

absl::Status DryRunApi::refusedInCapture(const std::string& call) const {
  return absl::FailedPreconditionError(
      absl::StrCat("dry run: ", call, " while the stream is captured (the GPU refuses it and invalidates the graph)"));
}

absl::Status DryRunApi::checkRange(const std::string& what, DevicePtr p, int64_t bytes) const {
  if (bytes == 0 || inside(p, bytes)) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("dry run: ", what, " touches ", bytes, " bytes at 0x", absl::Hex(p),
                                          ", outside every allocation"));
}

absl::Status DryRunApi::record(std::string call) {
  if (capturing_)
    capture_.push_back(call);
  calls_.push_back(std::move(call));
  return absl::OkStatus();
}

absl::Status DryRunApi::loadModule(const std::vector<uint8_t>& image, bool ptx) {
  if (loaded_) return absl::FailedPreconditionError("a code object is already loaded");
  if (!workspaceReserved_) {
    const int64_t workspace = workspaceBytes();
    if (gpu_.memoryBytes > 0 && deviceBytes_ + workspace > gpu_.memoryBytes) {
      const absl::Status full = gpuOutOfMemory(workspace, gpu_.memoryBytes - deviceBytes_, gpu_.memoryBytes);
      return absl::Status(full.code(), absl::StrCat("cuBLASLt's workspace: ", full.message()));
    }
    deviceBytes_ += workspace;
    workspaceReserved_ = true;
  }
  loaded_ = true;
  ptx_ = ptx;
  image_.assign(image.begin(), image.end());
  return record(absl::StrCat("load ", ptx ? "ptx" : "cubin", " (", image.size(), " bytes)"));
}

absl::StatusOr<KernelFn> DryRunApi::function(const std::string& name) {
  if (!loaded_) return absl::FailedPreconditionError("no code object loaded");
  // PTX declares each kernel as `.entry NAME(`; a cubin (ELF) has NAME in its string table.
  const bool present = ptx_ ? image_.find(".entry " + name + "(") != std::string::npos
                            : image_.find(std::string(1, '\0') + name + std::string(1, '\0')) != std::string::npos;
  if (!present)
    return absl::NotFoundError(absl::StrCat("kernel ", name, " is not in the bundle's code object"));
  auto [it, fresh] = functions_.emplace(name, static_cast<int>(names_.size()));
  if (fresh) names_.push_back(name);
  return reinterpret_cast<KernelFn>(static_cast<uintptr_t>(it->second + 1));
}

namespace {

// Bytes of a PTX parameter type (.u64, .f32, .b8, ...).
size_t ptxTypeBytes(absl::string_view type) {
  if (type.size() < 3 || type[0] != '.') return 0;
  const absl::string_view bits = type.substr(2);
  if (bits == "8") return 1;
  if (bits == "16") return 2;
  if (bits == "32") return 4;
  if (bits == "64") return 8;
  return 0;
}

}  // namespace

// `.visible .entry NAME(\n\t.param .u64 NAME_param_0,\n\t.param .align 8 .b8 NAME_param_1[3712]\n)`
void DryRunApi::kernelSignatures(const std::vector<uint8_t>& ptx) {
  const std::string text(ptx.begin(), ptx.end());
  size_t at = 0;
  while ((at = text.find(".entry ", at)) != std::string::npos) {
    const size_t nameBegin = at + 7;
    const size_t open = text.find('(', nameBegin);
    const size_t close = text.find(')', nameBegin);
    if (open == std::string::npos || close == std::string::npos || close < open) break;
    const std::string name = text.substr(nameBegin, open - nameBegin);
    std::vector<size_t> sizes;
    std::vector<char> scalar64, byValue;
    for (absl::string_view param : absl::StrSplit(absl::string_view(text).substr(open + 1, close - open - 1), ',')) {
      size_t bytes = 0, count = 1;
      bool array = false, integer = false;
      for (absl::string_view token : absl::StrSplit(param, absl::ByAnyChar(" \t\n"), absl::SkipEmpty())) {
        if (token == ".param" || token == ".align" || token == ".ptr" || token == ".global") continue;
        if (size_t b = ptxTypeBytes(token)) {
          bytes = b;
          integer = token[1] != 'f';
        } else if (size_t bracket = token.find('['); bracket != absl::string_view::npos) {
          count = static_cast<size_t>(std::strtoull(std::string(token.substr(bracket + 1)).c_str(), nullptr, 10));
          array = true;
        }
      }
      if (bytes) {
        sizes.push_back(bytes * count);
        scalar64.push_back(bytes == 8 && integer && !array);
        byValue.push_back(bytes == 1 && array);
      }
    }
    signatures_[name] = std::move(sizes);
    scalar64_[name] = std::move(scalar64);
    byValue_[name] = std::move(byValue);
    at = close;
  }
  readStructLayouts(text);
}

namespace {

// The initial bytes of every `amp_layout_*` global of the PTX, by name:
// `.global .align 8 .b8 amp_layout_AmpConvShape[24] = {136, 0, 0, 0, 0, 0, 0, 0, 8};`
// (values of wider types are stored little-endian; those the initializer omits are zero).
std::map<std::string, std::vector<uint8_t>> layoutGlobals(const std::string& ptx) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (absl::string_view line : absl::StrSplit(ptx, '\n')) {
    const size_t name = line.find(" amp_layout_");
    if (name == absl::string_view::npos || line.find(".global") == absl::string_view::npos) continue;
    const size_t bracket = line.find('[', name), brace = line.find('{', name), end = line.find('}', name);
    if (bracket == absl::string_view::npos || brace == absl::string_view::npos || end == absl::string_view::npos) continue;
    size_t width = 0;
    for (absl::string_view token : absl::StrSplit(line.substr(0, name), absl::ByAnyChar(" \t"), absl::SkipEmpty()))
      if (size_t b = ptxTypeBytes(token)) width = b;
    if (width == 0) continue;
    const size_t count = static_cast<size_t>(std::strtoull(std::string(line.substr(bracket + 1)).c_str(), nullptr, 10));
    std::vector<uint8_t> bytes(count * width, 0);
    size_t at = 0;
    for (absl::string_view v : absl::StrSplit(line.substr(brace + 1, end - brace - 1), ',', absl::SkipWhitespace())) {
      uint64_t value = std::strtoull(std::string(absl::StripAsciiWhitespace(v)).c_str(), nullptr, 10);
      for (size_t b = 0; b < width && at < bytes.size(); ++b, value >>= 8) bytes[at++] = static_cast<uint8_t>(value);
    }
    out[std::string(line.substr(name + 1, bracket - name - 1))] = std::move(bytes);
  }
  return out;
}

}  // namespace

// Each record: {sizeof, alignof, fields, then per field offset, rows, columns, pointee bytes} and
// "<struct>;<field>;..." (kernels/ParamLayouts.cu). A malformed record is left out, so the
// parameters it would describe are refused as undescribed.
void DryRunApi::readStructLayouts(const std::string& ptx) {
  const std::map<std::string, std::vector<uint8_t>> globals = layoutGlobals(ptx);
  for (const auto& [name, bytes] : globals) {
    auto names = globals.find(name + "_names");
    if (names == globals.end() || bytes.size() < 24 || bytes.size() % 8 != 0) continue;
    std::vector<int64_t> word(bytes.size() / 8);
    std::memcpy(word.data(), bytes.data(), bytes.size());
    const std::string text(names->second.begin(), std::find(names->second.begin(), names->second.end(), uint8_t{0}));
    const std::vector<std::string> parts = absl::StrSplit(text, ';');
    const int64_t fields = word[2];
    if (word[0] <= 0 || fields < 0 || word.size() != static_cast<size_t>(3 + 4 * fields) ||
        parts.size() != static_cast<size_t>(1 + fields))
      continue;
    StructLayout layout;
    layout.name = parts[0];
    bool fits = true;
    for (int64_t f = 0; f < fields; ++f) {
      const int64_t* w = &word[static_cast<size_t>(3 + 4 * f)];
      layout.fields.push_back({parts[static_cast<size_t>(1 + f)], w[0], w[1], w[2], w[3]});
      fits = fits && w[0] >= 0 && w[1] > 0 && w[2] > 0 && w[3] > 0 && w[0] + 8 * w[1] * w[2] <= word[0];
    }
    if (fits) layouts_[static_cast<size_t>(word[0])] = std::move(layout);
  }
}

absl::Status DryRunApi::checkStructPointers(const std::string& kernel, size_t k, const void* value, size_t bytes) const {
  auto it = layouts_.find(bytes);
  if (it == layouts_.end())
    return absl::InvalidArgumentError(absl::StrCat(
        "dry run: kernel ", kernel, ": parameter ", k, " is a struct of ", bytes,
        " bytes that no layout recorded in the code object describes (kernels/ParamLayouts.cu), so its pointers cannot be checked"));
  const StructLayout& layout = it->second;
  const auto* base = static_cast<const uint8_t*>(value);
  for (const StructLayout::Field& f : layout.fields)
    for (int64_t i = 0; i < f.rows * f.columns; ++i) {
      DevicePtr p = 0;
      std::memcpy(&p, base + f.offset + 8 * i, 8);
      if (p == 0 || insideDevice(p, f.pointee)) continue;  // null: an absent operand
      const std::string index = f.rows > 1       ? absl::StrCat("[", i / f.columns, "][", i % f.columns, "]")
                                : f.columns > 1 ? absl::StrCat("[", i, "]")
                                                : "";
      return absl::InvalidArgumentError(absl::StrCat("dry run: kernel ", kernel, ": parameter ", k, " (", layout.name,
                                                     "), field ", f.name, index, ": 0x", absl::Hex(p), " does not address ",
                                                     f.pointee, f.pointee == 1 ? " byte" : " bytes",
                                                     " of a live device allocation"));
    }
  return absl::OkStatus();
}

absl::Status DryRunApi::launch(KernelFn fn, int64_t blocks, int threads, void** params, int64_t blocksY,
                               absl::Span<const size_t> paramBytes) {
  const size_t index = static_cast<size_t>(reinterpret_cast<uintptr_t>(fn)) - 1;
  if (index >= names_.size()) return absl::InvalidArgumentError("dry run: launch of an unknown kernel");
  const std::string& name = names_[index];
  if (blocks < 1 || blocks > (int64_t{1} << 31) - 1 || blocksY < 1 || blocksY > 65535 || threads < 1 || threads > 1024)
    return absl::InvalidArgumentError(absl::StrCat("dry run: ", name, ": grid ", blocks, " x ", threads));
  if (auto it = signatures_.find(name); it != signatures_.end()) {
    const std::vector<size_t>& expected = it->second;
    if (!std::equal(expected.begin(), expected.end(), paramBytes.begin(), paramBytes.end()))
      return absl::InvalidArgumentError(absl::StrCat("dry run: kernel ", name, " takes parameters of [",
                                                     absl::StrJoin(expected, ", "), "] bytes; the launch passes [",
                                                     absl::StrJoin(paramBytes, ", "), "]"));
  }
  if (!params && !paramBytes.empty()) return absl::InvalidArgumentError("dry run: arguments without values");
  if (auto it = scalar64_.find(name); it != scalar64_.end() && !allocations_.empty()) {
    const DevicePtr low = allocations_.begin()->first;
    const DevicePtr high = allocations_.rbegin()->first + static_cast<DevicePtr>(allocations_.rbegin()->second);
    for (size_t k = 0; k < it->second.size() && k < paramBytes.size(); ++k) {
      if (!it->second[k]) continue;
      DevicePtr value = 0;
      std::memcpy(&value, params[k], 8);
      const bool inRange = value >= low && value <= high;
      if (inRange && !inside(value, 0))  // inside(p, 0): from an allocation's start to just past its end
        return absl::InvalidArgumentError(absl::StrCat("dry run: kernel ", name, ": parameter ", k, " (0x", absl::Hex(value),
                                                       ") points outside every live allocation"));
    }
  }
  // Structs by value: followed when the code object records layouts (bundles of an older ampc
  // record none).
  if (auto it = byValue_.find(name); it != byValue_.end() && !layouts_.empty())
    for (size_t k = 0; k < it->second.size() && k < paramBytes.size(); ++k)
      if (it->second[k])
        if (auto s = checkStructPointers(name, k, params[k], paramBytes[k]); !s.ok()) return s;
  if (!capturing_) ranKernel(name);
  return record(absl::StrCat("launch ", name, " ", blocks, blocksY > 1 ? absl::StrCat("x", blocksY) : "", "x", threads));
}

absl::Status DryRunApi::copyToDevice(DevicePtr dst, const void* src, int64_t bytes) {
  if (capturing_ && !pinned(src, bytes)) return refusedInCapture("copy to device from pageable host memory");
  if (auto s = checkRange("copy to device", dst, bytes); !s.ok()) return s;
  if (!capturing_ && bytes > 0) std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), src, static_cast<size_t>(bytes));
  return record(absl::StrCat("copy to device ", bytes));
}

absl::Status DryRunApi::copyToHost(void* dst, DevicePtr src, int64_t bytes) {
  if (capturing_ && !pinned(dst, bytes)) return refusedInCapture("copy to pageable host memory");
  if (auto s = checkRange("copy to host", src, bytes); !s.ok()) return s;
  const auto* from = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(src));
  if (!capturing_ && bytes > 0 && eventLag_ != 0 && pinned(dst, bytes)) {
    pendingCopies_.push_back({++streamPosition_, dst, std::vector<uint8_t>(from, from + bytes)});
  } else if (!capturing_ && bytes > 0) {
    std::memcpy(dst, from, static_cast<size_t>(bytes));
  }
  return record(absl::StrCat("copy to host ", bytes));
}

absl::Status DryRunApi::copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes) {
  if (auto s = checkRange("copy (destination)", dst, bytes); !s.ok()) return s;
  if (auto s = checkRange("copy (source)", src, bytes); !s.ok()) return s;
  memoryOp({false, dst, src, bytes, 0});
  return record(absl::StrCat("copy on device ", bytes));
}

void DryRunApi::perform(const MemoryOp& op) {
  auto* dst = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(op.dst));
  if (!op.fill) {
    std::memmove(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(op.src)), static_cast<size_t>(op.bytes));
    return;
  }
  for (int64_t i = 0; i < op.bytes / 4; ++i) std::memcpy(dst + 4 * i, &op.value, 4);
}

void DryRunApi::memoryOp(const MemoryOp& op) {
  if (capturing_) {
    captureMemory_.push_back(op);
  } else {
    perform(op);
  }
}

absl::Status DryRunApi::fill32(DevicePtr dst, uint32_t value, int64_t count) {
  if (auto s = checkRange("fill", dst, 4 * count); !s.ok()) return s;
  memoryOp({true, dst, 0, 4 * count, value});
  return record(absl::StrCat("fill ", count, " x ", value));
}

absl::StatusOr<GemmId> DryRunApi::prepareGemm(const GemmPlan& plan) {
  if (unavailable_ && unavailable_(plan)) return noGemmAlgorithm(plan);
  gemms_.push_back(plan);
  return static_cast<GemmId>(gemms_.size() - 1);
}

absl::Status DryRunApi::gemm(GemmId id, DevicePtr a, DevicePtr b, DevicePtr bias, DevicePtr d, DevicePtr aux) {
  if (id < 0 || static_cast<size_t>(id) >= gemms_.size()) return absl::InvalidArgumentError("dry run: unknown GEMM");
  const GemmPlan& g = gemms_[static_cast<size_t>(id)];
  const int64_t element = g.dtype == DType::F32 ? 4 : 2;
  const int64_t batches = g.batch;
  // Extent of each operand: the last batch's last column, in its leading dimension.
  auto extent = [&](int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    return element * ((batches - 1) * stride + (cols - 1) * ld + rows);
  };
  // cuBLASLt's A is the step's b, its B the step's a (GemmPlan.h).
  if (auto s = checkRange("GEMM operand b", b,
                          extent(g.transA ? g.k : g.m, g.transA ? g.m : g.k, g.lda, g.strideA));
      !s.ok())
    return s;
  if (auto s = checkRange("GEMM operand a", a,
                          extent(g.transB ? g.n : g.k, g.transB ? g.k : g.n, g.ldb, g.strideB));
      !s.ok())
    return s;
  if (auto s = checkRange("GEMM result", d, extent(g.m, g.n, g.ldc, g.strideC)); !s.ok()) return s;
  // The algorithm was chosen for the plan's alignments: every pointer must have them.
  const std::pair<const char*, std::pair<DevicePtr, int64_t>> aligned[] = {
      {"operand b", {b, g.alignment.a}}, {"operand a", {a, g.alignment.b}}, {"result", {d, g.alignment.d}},
      {"bias", {bias, g.alignment.bias}}, {"auxiliary matrix", {aux, g.alignment.aux}}};
  for (const auto& [what, pa] : aligned)
    if (pa.first && addressAlignment(pa.first) < pa.second)
      return absl::InvalidArgumentError(absl::StrCat("dry run: GEMM ", what, " is ", addressAlignment(pa.first),
                                                     "-byte aligned; its algorithm was chosen for ", pa.second));
  // A bias (or its gradient) has one value per row of D, BGRADB's one per column.
  const bool needsBias = epilogueReadsBias(g.epilogue) || epilogueWritesBiasGrad(g.epilogue);
  if (needsBias != (bias != 0))
    return absl::InvalidArgumentError(absl::StrCat("dry run: epilogue ", std::string(gemmEpilogueName(g.epilogue)),
                                                   needsBias ? " needs" : " takes no", " bias pointer"));
  if (bias)
    if (auto s = checkRange("GEMM bias", bias, element * (g.epilogue == GemmEpilogue::BgradB ? g.n : g.m)); !s.ok())
      return s;
  if ((epilogueAux(g.epilogue) != GemmAux::None) != (aux != 0))
    return absl::InvalidArgumentError(absl::StrCat("dry run: epilogue ", std::string(gemmEpilogueName(g.epilogue)),
                                                   aux ? " takes no" : " needs an", " auxiliary matrix"));
  if (aux) {
    if (g.auxLd < g.m || g.auxLd % (epilogueAux(g.epilogue) == GemmAux::ReluMask ? 128 : 8) != 0)
      return absl::InvalidArgumentError(absl::StrCat("dry run: auxiliary leading dimension ", g.auxLd, " for ", g.m, " rows"));
    if (auto s = checkRange("GEMM auxiliary matrix", aux, auxBytes(g)); !s.ok()) return s;
  }
  return record(absl::StrCat("gemm ", g.m, "x", g.n, "x", g.k, " ", std::string(gemmEpilogueName(g.epilogue))));
}

absl::Status DryRunApi::beginCapture() {
  if (capturing_) return absl::FailedPreconditionError("dry run: capture already in progress");
  capturing_ = true;
  capture_.clear();
  captureMemory_.clear();
  return record("begin capture");
}

absl::StatusOr<GraphId> DryRunApi::endCapture() {
  if (!capturing_) return absl::FailedPreconditionError("dry run: no capture in progress");
  capturing_ = false;
  if (!captureError_.ok()) {
    const absl::Status error = captureError_;
    captureError_ = absl::OkStatus();
    return error;
  }
  graphs_.push_back(capture_);
  graphMemory_.push_back(captureMemory_);
  (void)record(absl::StrCat("end capture: graph ", graphs_.size() - 1, " of ", capture_.size(), " operations"));
  return static_cast<GraphId>(graphs_.size() - 1);
}

// Like a GPU's, the error names no kernel: the wait cannot know which one faulted.
void DryRunApi::ranKernel(const std::string& name) {
  if (!faultKernel_.empty() && name == faultKernel_)
    pendingFault_ = "dry run: the GPU's work failed: CUDA_ERROR_ILLEGAL_ADDRESS (a simulated fault)";
}

absl::Status DryRunApi::reportFault() {
  if (pendingFault_.empty()) return absl::OkStatus();
  const absl::Status fault = absl::InternalError(pendingFault_);
  pendingFault_.clear();
  return fault;
}

absl::Status DryRunApi::launchGraph(GraphId graph) {
  if (graph < 0 || static_cast<size_t>(graph) >= graphs_.size()) return absl::InvalidArgumentError("dry run: unknown graph");
  ++graphLaunches_;
  for (const MemoryOp& op : graphMemory_[static_cast<size_t>(graph)]) perform(op);
  for (const std::string& call : graphs_[static_cast<size_t>(graph)])  // "launch NAME 1x256"
    if (call.rfind("launch ", 0) == 0) ranKernel(call.substr(7, call.find(' ', 7) - 7));
  return record(absl::StrCat("graph ", graph));
}

absl::Status DryRunApi::recordEvent(int slot) {
  if (eventLag_ != 0) pendingEvents_[slot] = {queries_, ++streamPosition_};
  return record(absl::StrCat("event ", slot));
}

// The stream has passed the event: every earlier event and copy has completed with it.
void DryRunApi::completeEvent(int slot) {
  auto it = pendingEvents_.find(slot);
  if (it == pendingEvents_.end()) return;
  const int64_t position = it->second.position;
  for (auto e = pendingEvents_.begin(); e != pendingEvents_.end();)
    e = e->second.position <= position ? pendingEvents_.erase(e) : std::next(e);
  auto landed = std::stable_partition(pendingCopies_.begin(), pendingCopies_.end(),
                                      [&](const PendingCopy& c) { return c.position < position; });
  for (auto c = pendingCopies_.begin(); c != landed; ++c) std::memcpy(c->dst, c->bytes.data(), c->bytes.size());
  pendingCopies_.erase(pendingCopies_.begin(), landed);
}

bool DryRunApi::eventDone(int slot) {
  ++queries_;
  auto it = pendingEvents_.find(slot);
  if (it == pendingEvents_.end()) return true;
  if (eventLag_ < 0 || queries_ - it->second.recordedAtQuery <= eventLag_) return false;
  completeEvent(slot);
  return true;
}

absl::Status DryRunApi::waitEvent(int slot) {
  ++syncs_;
  completeEvent(slot);
  if (auto fault = reportFault(); !fault.ok()) return fault;
  return record(absl::StrCat("wait event ", slot));
}
absl::Status DryRunApi::recordTimer(int timer) {
  if (capturing_) return absl::FailedPreconditionError("dry run: a timer recorded during capture");
  if (timer < 0) return absl::InvalidArgumentError("dry run: negative timer");
  if (static_cast<size_t>(timer) >= timers_.size()) timers_.resize(static_cast<size_t>(timer) + 1, 0);
  timers_[static_cast<size_t>(timer)] = 1;
  return record(absl::StrCat("timer ", timer));
}

absl::StatusOr<float> DryRunApi::elapsedMs(int from, int to) {
  auto recorded = [&](int t) { return t >= 0 && static_cast<size_t>(t) < timers_.size() && timers_[static_cast<size_t>(t)]; };
  if (!recorded(from) || !recorded(to)) return absl::InvalidArgumentError("dry run: elapsedMs of a timer never recorded");
  return 0.0f;
}

absl::Status DryRunApi::synchronize() {
  if (capturing_) return absl::FailedPreconditionError("dry run: synchronize during capture (the GPU would refuse)");
  ++syncs_;
  pendingEvents_.clear();
  for (const PendingCopy& c : pendingCopies_) std::memcpy(c.dst, c.bytes.data(), c.bytes.size());
  pendingCopies_.clear();
  if (auto fault = reportFault(); !fault.ok()) return fault;
  return record("sync");
}

}  // namespace amp::rt::cuda
