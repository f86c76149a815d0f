// Compiled with -fexceptions: libonnx's checker, shape inference and version converter throw.
#include "import/onnx/ModelLoader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "import/onnx/GraphTranslator.h"
#include "import/onnx/GuardedShapeInference.h"
#include "import/onnx/RankRules.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/version_converter/convert.h"

namespace mlir::amp::onnx_import {
namespace {

bool isDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string shapeText(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s.empty() ? "scalar" : s;
}

std::string dimText(const onnx::TensorShapeProto::Dimension& d) {
  if (d.has_dim_value()) return std::to_string(d.dim_value());
  if (d.has_dim_param() && !d.dim_param().empty()) return "'" + d.dim_param() + "'";
  return "?";
}

// Makes every graph input static: --input-shape first, then --batch for dim 0, and a dim_param
// bound once (e.g. "batch") takes that value in every input and output that names it.
bool bindInputShapes(onnx::GraphProto& graph, const ImportOptions& options, std::string* error) {
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  std::map<std::string, const std::vector<int64_t>*> given;
  for (const auto& [name, dims] : options.inputShapes) given[name] = &dims;
  std::set<std::string> inputNames;
  for (const auto& input : graph.input()) inputNames.insert(input.name());
  for (const auto& [name, dims] : given)
    if (!inputNames.count(name) || initializers.count(name)) {
      std::string known;
      for (const auto& input : graph.input())
        if (!initializers.count(input.name())) known += (known.empty() ? "" : ", ") + ("'" + input.name() + "'");
      *error = "--input-shape names '" + name + "', which is not a graph input of the model (its inputs: " + known + ")";
      return false;
    }

  std::map<std::string, int64_t> boundParams;
  for (auto& input : *graph.mutable_input()) {
    if (initializers.count(input.name())) continue;  // an initializer listed as input (IR < 4)
    if (!input.type().has_tensor_type()) {
      *error = "graph input '" + input.name() + "' is not a tensor (sequences, maps and optionals are not supported)";
      return false;
    }
    auto* tensorType = input.mutable_type()->mutable_tensor_type();
    auto it = given.find(input.name());
    if (!tensorType->has_shape()) {
      if (it == given.end()) {
        *error = "graph input '" + input.name() + "' has no shape (not even a rank); give it with --input-shape " +
                 input.name() + "=D0xD1x...";
        return false;
      }
      tensorType->mutable_shape();
      for (size_t i = 0; i < it->second->size(); ++i) tensorType->mutable_shape()->add_dim();
    }
    auto* shape = tensorType->mutable_shape();
    if (it != given.end() && static_cast<size_t>(shape->dim_size()) != it->second->size()) {
      *error = "--input-shape " + input.name() + "=" + shapeText(*it->second) + " has rank " +
               std::to_string(it->second->size()) + ", but the input has rank " + std::to_string(shape->dim_size());
      return false;
    }
    for (int d = 0; d < shape->dim_size(); ++d) {
      auto* dim = shape->mutable_dim(d);
      std::optional<int64_t> value;
      if (it != given.end()) {
        value = (*it->second)[d];
        if (dim->has_dim_value() && dim->dim_value() != *value) {
          *error = "--input-shape " + input.name() + "=" + shapeText(*it->second) + " gives dim " + std::to_string(d) +
                   " as " + std::to_string(*value) + ", but the model fixes it to " + std::to_string(dim->dim_value());
          return false;
        }
      } else if (dim->has_dim_value()) {
        value = dim->dim_value();
      } else if (dim->has_dim_param() && boundParams.count(dim->dim_param())) {
        value = boundParams[dim->dim_param()];
      } else if (d == 0 && options.batch) {
        value = *options.batch;
      }
      if (!value) {
        *error = "graph input '" + input.name() + "' has the symbolic dim " + std::to_string(d) + " (" + dimText(*dim) +
                 "); bind it with --input-shape " + input.name() + "=D0xD1x..." +
                 (d == 0 ? " or --batch=N" : "") + " (every shape must be static)";
        return false;
      }
      if (*value <= 0) {
        *error = "graph input '" + input.name() + "': dim " + std::to_string(d) + " must be positive, got " +
                 std::to_string(*value);
        return false;
      }
      if (dim->has_dim_param() && !dim->dim_param().empty()) {
        auto [bound, inserted] = boundParams.emplace(dim->dim_param(), *value);
        if (!inserted && bound->second != *value) {
          *error = "the symbolic dim '" + dim->dim_param() + "' is bound to both " + std::to_string(bound->second) +
                   " and " + std::to_string(*value) + " (graph input '" + input.name() + "')";
          return false;
        }
      }
      dim->set_dim_value(*value);
    }
  }
  // Outputs and intermediate values: bound params become values, others are left to inference.
  auto rebind = [&](onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    for (auto& dim : *info.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (dim.has_dim_value()) continue;
      auto bound = dim.has_dim_param() ? boundParams.find(dim.dim_param()) : boundParams.end();
      if (bound != boundParams.end())
        dim.set_dim_value(bound->second);
      else
        dim.clear_dim_param();
    }
  };
  for (auto& output : *graph.mutable_output()) rebind(output);
  for (auto& info : *graph.mutable_value_info()) rebind(info);
  return true;
}

// --- Screening: what libonnx must never see ------------------------------------------------
// libonnx's checker, version converter and shape inference trust the model: a recursive function
// overflows the stack, a zero stride divides by zero, an external-data path is stat()ed against
// the current directory. Everything they would trust is checked here first.

// The largest value a conv/pool size attribute may have (a kernel, stride or dilation of 2^31 is
// no model; it would only overflow libonnx's and ampc's arithmetic).
constexpr int64_t kMaxWindowAttribute = int64_t{1} << 31;

std::optional<LoadError> refuseNode(const onnx::NodeProto& node, int index, const std::string& what) {
  return LoadError{describeNode(node, index) + ": " + what, index};
}

std::string intsText(const onnx::AttributeProto& a) {
  std::string s = "[";
  for (int i = 0; i < a.ints_size(); ++i) s += (i ? ", " : "") + std::to_string(a.ints(i));
  return s + "]";
}

// The attributes libonnx's converter and shape inference compute with, in range: conv and pool
// windows (strides, dilations and kernel_shape positive, pads non-negative, group positive),
// Transpose's perm (a permutation) and flags (0 or 1). Attributes of a kind ampc never reads (subgraphs, sparse
// tensors) are refused: no op ampc imports has one.
std::optional<LoadError> screenAttributes(const onnx::NodeProto& node, int index) {
  for (const auto& a : node.attribute()) {
    if (a.has_g() || a.graphs_size() || a.type() == onnx::AttributeProto::GRAPH ||
        a.type() == onnx::AttributeProto::GRAPHS)
      return refuseNode(node, index, "attribute '" + a.name() + "' holds a subgraph; ampc imports no control flow");
    if (a.has_sparse_tensor() || a.sparse_tensors_size() || a.type() == onnx::AttributeProto::SPARSE_TENSOR ||
        a.type() == onnx::AttributeProto::SPARSE_TENSORS)
      return refuseNode(node, index, "attribute '" + a.name() + "' holds a sparse tensor, which ampc does not read");
    const std::string& name = a.name();
    const bool positive = name == "strides" || name == "dilations" || name == "kernel_shape";
    if (positive || name == "pads") {
      const int64_t low = positive ? 1 : 0;
      for (int64_t v : a.ints())
        if (v < low || v >= kMaxWindowAttribute)
          return refuseNode(node, index, "attribute " + name + " = " + intsText(a) + " is out of range (each entry " +
                                             (positive ? "positive" : "non-negative") + " and below 2^31)");
    }
    // Flags: libonnx's version converter indexes shapes with some of them (Gemm 6->7 reads
    // B's dim [1 - transB]), so a transB of 2^62 read out of bounds.
    static const char* const kFlags[] = {"transA",    "transB",        "broadcast",     "keepdims",
                                         "allowzero", "upper",         "training_mode", "count_include_pad",
                                         "ceil_mode", "storage_order", "is_test",       "spatial",
                                         "noop_with_empty_axes"};
    if (a.type() == onnx::AttributeProto::INT && llvm::is_contained(kFlags, llvm::StringRef(name)) &&
        a.i() != 0 && a.i() != 1)
      return refuseNode(node, index, "attribute " + name + " = " + std::to_string(a.i()) + " is not 0 or 1");
    if (name == "group" && (a.i() < 1 || a.i() >= kMaxWindowAttribute))
      return refuseNode(node, index,
                        "attribute group = " + std::to_string(a.i()) + " is out of range (positive and below 2^31)");
    if (name == "perm" && node.op_type() == "Transpose") {
      std::vector<bool> seen(a.ints_size(), false);
      for (int64_t v : a.ints()) {
        if (v < 0 || v >= a.ints_size() || seen[v])
          return refuseNode(node, index, "attribute perm = " + intsText(a) + " is not a permutation of 0.." +
                                             std::to_string(a.ints_size() - 1));
        seen[v] = true;
      }
    }
  }
  return std::nullopt;
}

// --- External data, confined to the model's folder ---------------------------------------------

// An open directory or file descriptor, closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Whether `location` may be read at all, judged from its text alone, before anything touches the
// file system: a relative path of plain names ("weights.bin", "data/w.bin"). The refusal is the
// same sentence whether or not such a file exists.
bool isConfinedLocation(const std::string& location) {
  if (location.empty() || location.size() > 4096 || location.find('\0') != std::string::npos ||
      location.front() == '/')
    return false;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(location).split(parts, '/');
  return llvm::all_of(parts, [](llvm::StringRef p) { return !p.empty() && p != "." && p != ".."; });
}

// The external data of `tensor` (what: "initializer 'w'" or "node ...'s attribute 'value'"),
// read into its raw_data from a regular file inside the folder `dir`: each path component opened
// with O_NOFOLLOW below `dir`, the file with O_NONBLOCK (a FIFO never blocks) and checked with
// fstat, offset and length checked against its size.
// `folder` opens the model's folder (once) when a location has passed the text checks.
std::optional<std::string> readExternalData(onnx::TensorProto& tensor, const std::string& what,
                                            const std::function<const Fd&(std::string*)>& folder) {
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto& entry : tensor.external_data()) {
    const std::string& key = entry.key();
    if (key == "location") {
      location = entry.value();
    } else if (key == "offset" || key == "length") {
      uint64_t v = 0;
      if (llvm::StringRef(entry.value()).getAsInteger(10, v))
        return what + ": external data " + key + " '" + entry.value() + "' is not a non-negative integer";
      (key == "offset" ? offset : length) = v;
    } else if (key != "checksum") {
      return what + ": external data has the unknown key '" + key +
             "' (ONNX defines location, offset, length, checksum)";
    }
  }
  if (!isConfinedLocation(location))
    return what + ": external data location '" + location +
           "' is refused: ampc reads external data only from a relative path of plain names inside the model's "
           "folder (no absolute path, no '.' or '..' component, no empty component)";
  std::string dirError;
  const Fd& dir = folder(&dirError);
  if (dir.fd < 0) return what + ": external data '" + location + "' cannot be read: " + dirError;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(location).split(parts, '/');
  std::optional<Fd> current;
  auto openError = [&](bool folder, int err) {
    std::string why = err == ELOOP                ? "a path component is a symbolic link, which ampc does not follow"
                      : err == ENOTDIR && folder ? "a path component is not a folder"
                                                 : std::strerror(err);
    return what + ": cannot open external data '" + location + "' in the model's folder: " + why;
  };
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int fd = openat(current ? current->fd : dir.fd, parts[i].str().c_str(),
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return openError(true, errno);
    current.emplace(fd);
  }
  Fd file(openat(current ? current->fd : dir.fd, parts.back().str().c_str(),
                 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (file.fd < 0) return openError(false, errno);
  struct stat st;
  if (fstat(file.fd, &st) != 0) return what + ": cannot stat external data '" + location + "': " + std::strerror(errno);
  if (!S_ISREG(st.st_mode))
    return what + ": external data '" + location + "' is not a regular file (FIFOs, devices and folders are refused)";
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint64_t begin = offset.value_or(0);
  if (begin > size)
    return what + ": external data offset " + std::to_string(begin) + " is past the end of '" + location + "' (" +
           std::to_string(size) + " bytes)";
  const uint64_t count = length.value_or(size - begin);
  if (count > size - begin)
    return what + ": external data [" + std::to_string(begin) + ", +" + std::to_string(count) + ") lies outside '" +
           location + "' (" + std::to_string(size) + " bytes)";
  if (count > kMaxTensorBytes)
    return what + ": external data of " + std::to_string(count) + " bytes is larger than the runtime's limit of " +
           std::to_string(kMaxTensorBytes) + " bytes per tensor";
  // Read with pread, not mapped: a file truncated by someone else while it is mapped would kill
  // ampc with SIGBUS, and the bytes are copied into the tensor's raw_data either way.
  std::string* raw = tensor.mutable_raw_data();
  raw->resize(count);
  for (uint64_t done = 0; done < count;) {
    ssize_t r = pread(file.fd, raw->data() + done, count - done, static_cast<off_t>(begin + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return what + ": cannot read external data '" + location +
             "': " + (r < 0 ? std::strerror(errno) : "the file shrank");
    done += static_cast<uint64_t>(r);
  }
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
  return std::nullopt;
}

// Brings every tensor with external data (initializers and Constant-like attribute values) into
// the model, so libonnx's checker never resolves a location itself.
std::optional<LoadError> readAllExternalData(onnx::ModelProto& model, llvm::StringRef filename) {
  std::optional<Fd> dir;
  std::string dirError;
  const std::function<const Fd&(std::string*)> folder = [&](std::string* error) -> const Fd& {
    if (!dir) {
      if (filename.empty() || filename == "<stdin>" || filename == "-") {
        dir.emplace(-1);
        dirError = "the model was read from standard input, so it has no folder";
      } else {
        std::string path = llvm::sys::path::parent_path(filename).str();
        dir.emplace(open(path.empty() ? "." : path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (dir->fd < 0) dirError = "the model's folder cannot be opened: " + std::string(std::strerror(errno));
      }
    }
    *error = dirError;
    return *dir;
  };
  auto* graph = model.mutable_graph();
  for (auto& init : *graph->mutable_initializer()) {
    if (init.data_location() != onnx::TensorProto::EXTERNAL && init.external_data_size() == 0) continue;
    if (auto error = readExternalData(init, "initializer '" + init.name() + "'", folder))
      return LoadError{*error, -1};
  }
  for (int i = 0; i < graph->node_size(); ++i) {
    auto* node = graph->mutable_node(i);
    for (auto& a : *node->mutable_attribute()) {
      std::vector<onnx::TensorProto*> tensors;
      if (a.has_t()) tensors.push_back(a.mutable_t());
      for (auto& t : *a.mutable_tensors()) tensors.push_back(&t);
      for (onnx::TensorProto* t : tensors) {
        if (t->data_location() != onnx::TensorProto::EXTERNAL && t->external_data_size() == 0) continue;
        if (auto error = readExternalData(*t, "attribute '" + a.name() + "'", folder))
          return refuseNode(*node, i, *error);
      }
    }
  }
  return std::nullopt;
}

// Every declared rank within kMaxRank, and every shape operand of a declared length (a graph input,
// value_info or initializer of rank 1) at most kMaxRank long, before libonnx infers any shape.
std::optional<LoadError> screenRanks(const onnx::GraphProto& graph, int64_t opset) {
  std::map<std::string, int64_t> length;  // value -> its static element count, for rank-1 values
  std::map<std::string, int> rank;        // value -> its declared rank
  auto declare = [&](const onnx::ValueInfoProto& v, const char* what) -> std::optional<LoadError> {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return std::nullopt;
    const auto& shape = v.type().tensor_type().shape();
    if (shape.dim_size() > kMaxRank)
      return LoadError{std::string(what) + " '" + v.name() + "' declares rank " + std::to_string(shape.dim_size()) +
                           "; ampc imports values of rank at most " + std::to_string(kMaxRank),
                       -1};
    rank[v.name()] = shape.dim_size();
    if (shape.dim_size() == 1 && shape.dim(0).has_dim_value()) length[v.name()] = shape.dim(0).dim_value();
    // The declared size, as for a tensor's dims: libonnx sizes its own buffers by it (a Gemm input
    // declared [2^40] made it ask for 88 TB, found by fuzz-onnx).
    if (auto tooLarge = checkTensorTypeSize(v.type().tensor_type()))
      return LoadError{std::string(what) + " '" + v.name() + "' declares the dims " + *tooLarge, -1};
    return std::nullopt;
  };
  for (const auto& v : graph.input())
    if (auto e = declare(v, "the graph input")) return e;
  for (const auto& v : graph.value_info())
    if (auto e = declare(v, "the value_info")) return e;
  for (const auto& v : graph.output())
    if (auto e = declare(v, "the graph output")) return e;
  for (const auto& init : graph.initializer()) {
    if (init.dims_size() > kMaxRank)
      return LoadError{"the initializer '" + init.name() + "' has rank " + std::to_string(init.dims_size()) +
                           "; ampc imports values of rank at most " + std::to_string(kMaxRank),
                       -1};
    rank[init.name()] = init.dims_size();
    if (init.dims_size() == 1) length[init.name()] = init.dims(0);
  }
  for (const auto& node : graph.node())
    if (node.op_type() == "Constant" && node.output_size() == 1)
      for (const auto& a : node.attribute())
        if (a.name() == "value" && a.has_t() && a.t().dims_size() == 1) length[node.output(0)] = a.t().dims(0);
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    // ONNX's version converter takes Gemm's A and B to be matrices below opset 7 (its 6-to-7
    // adapter indexes their dims unchecked; a rank-1 A made it read past them, found by fuzz-onnx).
    if (opset < 7 && node.op_type() == "Gemm")
      for (int k = 0; k < 2 && k < node.input_size(); ++k) {
        auto r = rank.find(node.input(k));
        if (r == rank.end() || r->second != 2)
          return refuseNode(node, i, "in an opset " + std::to_string(opset) + " model, Gemm's " + (k ? "B" : "A") +
                                         " ('" + node.input(k) + "') must be declared a matrix (rank 2) for ONNX's " +
                                         "version converter (re-export with opset 13 or later)");
      }
    auto declaredRank = [&](int k) -> std::optional<int64_t> {
      auto r = rank.find(node.input(k));
      return r == rank.end() ? std::nullopt : std::optional<int64_t>(r->second);
    };
    auto declaredLength = [&](int k) -> std::optional<int64_t> {
      auto n = length.find(node.input(k));
      return n == length.end() ? std::nullopt : std::optional<int64_t>(n->second);
    };
    if (auto broken = checkInputRanks(node, declaredRank, declaredLength)) return refuseNode(node, i, *broken);
  }
  return std::nullopt;
}

// Refuses, before libonnx sees the model, everything its checker, converter and shape inference
// would trust, and reads the external data.
std::optional<LoadError> screenModel(onnx::ModelProto& model, llvm::StringRef filename) {
  if (model.functions_size() > 0) {
    std::vector<std::string> names;
    for (const auto& f : model.functions()) names.push_back("'" + f.name() + "'");
    return LoadError{"the model defines " + std::to_string(model.functions_size()) + " model-local function" +
                         (model.functions_size() == 1 ? "" : "s") + " (" + llvm::join(names, ", ") +
                         "); ampc imports no ONNX functions (export the model with them inlined)",
                     -1};
  }
  const auto& graph = model.graph();
  if (graph.sparse_initializer_size() > 0)
    return LoadError{"the model has sparse initializers ('" + graph.sparse_initializer(0).values().name() +
                         "'), which ampc does not read",
                     -1};
  // The graph's dataflow, as libonnx's converter and shape inference assume it without checking
  // (a graph output that nothing defines crashed the version converter): every value defined once,
  // by a graph input, an initializer or one node output, before it is read; every graph input a
  // tensor with an element type.
  std::set<std::string> defined;
  for (const auto& init : graph.initializer())
    if (!defined.insert(init.name()).second)
      return LoadError{"the initializer '" + init.name() + "' is defined twice", -1};
  for (const auto& input : graph.input()) {
    if (!input.type().has_tensor_type() || input.type().tensor_type().elem_type() == onnx::TensorProto::UNDEFINED)
      return LoadError{"graph input '" + input.name() +
                           "' is not a tensor with an element type (sequences, maps and optionals are not supported)",
                       -1};
    if (!defined.insert(input.name()).second) {
      const bool initializer = llvm::any_of(graph.initializer(), [&](const auto& i) { return i.name() == input.name(); });
      if (!initializer) return LoadError{"the graph input '" + input.name() + "' is defined twice", -1};
    }
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    for (const auto& in : node.input())
      if (!in.empty() && !defined.count(in))
        return refuseNode(node, i, "input '" + in + "' is not defined before the node");
    for (const auto& out : node.output())
      if (!out.empty() && !defined.insert(out).second)
        return refuseNode(node, i, "output '" + out + "' is already defined (ONNX values are defined once)");
  }
  for (const auto& output : graph.output())
    if (!defined.count(output.name()))
      return LoadError{"graph output '" + output.name() + "' is not produced by any node", -1};
  // Every node is screened, so that one compile names every node refused here, then sums them up
  // by reason (the op type and what is wrong), as the translator does for what it refuses.
  std::vector<LoadError> refused;
  std::vector<std::pair<std::string, int>> reasons;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    std::optional<LoadError> error;
    std::string reason;
    if (!isDefaultDomain(node.domain())) {
      reason = "ops of domain '" + node.domain() + "' are not supported (only the default ONNX domain)";
      error = refuseNode(node, i, reason);
    } else if (!isImportedOpType(node.op_type())) {
      reason = "this op is not supported yet";
      error = refuseNode(node, i, unsupportedOpMessage());
    } else if ((error = screenAttributes(node, i))) {
      reason = error->message.substr(std::min(error->message.size(), describeNode(node, i).size() + 2));
    }
    if (!error) continue;
    refused.push_back(*error);
    reason = node.op_type() + ": " + reason;
    auto it = llvm::find_if(reasons, [&](const auto& r) { return r.first == reason; });
    if (it == reasons.end()) reasons.emplace_back(reason, 1);
    else ++it->second;
  }
  if (!refused.empty()) {
    LoadError first = refused.front();
    for (size_t k = 1; k < refused.size(); ++k) first.moreNodes.emplace_back(refused[k].node, refused[k].message);
    if (refused.size() > 1) {
      first.summary = "ampc refuses " + std::to_string(refused.size()) + " of the model's " +
                      std::to_string(graph.node_size()) + " nodes (each named above). By reason:";
      for (const auto& [text, nodes] : reasons) first.summary += "\n  " + std::to_string(nodes) + " x " + text;
    }
    return first;
  }
  if (auto error = screenRanks(graph, defaultOpsetVersion(model))) return error;
  // LayerNormalization's Mean and InvStdDev: libonnx's shape inference builds their shapes from
  // `axis` unchecked (an axis below -rank read past the input's dims, found by fuzz-onnx). ampc
  // imports Y only: unused statistics outputs are dropped here, used ones refused, before it runs.
  std::set<std::string> read;
  for (const auto& node : graph.node())
    for (const auto& in : node.input()) read.insert(in);
  for (const auto& output : graph.output()) read.insert(output.name());
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto& node = *model.mutable_graph()->mutable_node(i);
    if (node.op_type() != "LayerNormalization") continue;
    for (int k = 1; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      if (read.count(node.output(k)))
        return refuseNode(node, i, "its output '" + node.output(k) + "' (" + (k == 1 ? "Mean" : "InvStdDev") +
                                       ") is read; ampc imports LayerNormalization's Y only");
      node.set_output(k, "");
    }
    while (node.output_size() > 1 && node.output(node.output_size() - 1).empty()) node.mutable_output()->RemoveLast();
  }
  if (auto error = readAllExternalData(model, filename)) return error;
  // Every tensor holds the data its dims say, before libonnx's checker and data propagation
  // read one by its dims.
  std::string error;
  for (const auto& init : graph.initializer())
    if (!checkTensorSize(init, &error)) return LoadError{"initializer '" + init.name() + "': " + error, -1};
  for (int i = 0; i < graph.node_size(); ++i)
    for (const auto& a : graph.node(i).attribute()) {
      if (a.has_t() && !checkTensorSize(a.t(), &error))
        return refuseNode(graph.node(i), i, "attribute '" + a.name() + "': " + error);
      for (const auto& t : a.tensors())
        if (!checkTensorSize(t, &error)) return refuseNode(graph.node(i), i, "attribute '" + a.name() + "': " + error);
    }
  return std::nullopt;
}

}  // namespace

std::string describeNode(const onnx::NodeProto& node, int index) {
  std::string domain = node.domain().empty() ? "ai.onnx" : node.domain();
  std::string name = node.name().empty() ? "#" + std::to_string(index) : node.name();
  return "node '" + name + "' (op_type " + node.op_type() + ", domain " + domain + ")";
}

int64_t defaultOpsetVersion(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import())
    if (isDefaultDomain(opset.domain())) return opset.version();
  return 0;
}

std::optional<onnx::ModelProto> loadOnnxModel(llvm::StringRef bytes, llvm::StringRef filename,
                                              const ImportOptions& options, LoadError* loadError) {
  std::string* error = &loadError->message;
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !model.has_graph()) {
    *error = "not a valid ONNX model (the file does not parse as an onnx.ModelProto with a graph)";
    return std::nullopt;
  }
  try {
    int64_t opset = defaultOpsetVersion(model);
    if (opset == 0) {
      *error = "the model imports no opset of the default ONNX domain";
      return std::nullopt;
    }
    if (opset > kTargetOpset) {
      *error = "the model uses opset " + std::to_string(opset) + "; ampc imports opsets " +
               std::to_string(kMinOpset) + " to " + std::to_string(kTargetOpset) +
               " (re-export with opset_version=" + std::to_string(kTargetOpset) + ")";
      return std::nullopt;
    }
    if (auto refused = screenModel(model, filename)) {
      *loadError = std::move(*refused);
      return std::nullopt;
    }
    onnx::checker::check_model(model);
    if (opset < kMinOpset) {
      try {
        model = onnx::version_conversion::ConvertVersion(model, static_cast<int>(kTargetOpset));
      } catch (const std::exception& e) {
        *error = "the model uses opset " + std::to_string(opset) + ", and ONNX's version converter could not " +
                 "bring it to opset " + std::to_string(kTargetOpset) + ": " + e.what();
        return std::nullopt;
      }
    }
    if (!bindInputShapes(*model.mutable_graph(), options, error)) return std::nullopt;
    if (auto stopped = inferShapesGuarded(model)) {
      *loadError = std::move(*stopped);
      return std::nullopt;
    }
  } catch (const onnx::checker::ValidationError& e) {
    *error = std::string("the ONNX checker refuses the model: ") + e.what();
    return std::nullopt;
  } catch (const std::exception& e) {
    *error = std::string("libonnx refused the model: ") + e.what();
    return std::nullopt;
  }
  return model;
}

}  // namespace mlir::amp::onnx_import
