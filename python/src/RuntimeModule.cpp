// ampc._runtime: a session over a compiled bundle for the Python package (python/ampc/). A thin
// layer: feeds come in as numpy arrays (borrowed, not copied, where their dtype, layout and
// alignment allow), entries and optimizer steps run with the GIL released, and params, state and
// checkpoints go through the runtime's own Session and Checkpoint code. No training logic here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <omp.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/devices/Devices.h"
#include "runtime/dist/Communicator.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/Bundle.h"
#include "runtime/plan/Provenance.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Dataset.h"
#include "runtime/train/StepLog.h"

namespace py = pybind11;
using namespace amp::rt;

namespace {

// A runtime error (an absl::Status), raised in Python as ampc._runtime.RuntimeError (a subclass of
// Python's RuntimeError) with the runtime's message. Not a std::runtime_error: pybind11's own
// TypeError/ValueError derive from that, and must keep their Python types.
struct RuntimeFailure : std::exception {
  explicit RuntimeFailure(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

[[noreturn]] void raise(const absl::Status& status) { throw RuntimeFailure(std::string(status.message())); }

template <class T>
T valueOr(absl::StatusOr<T> r) {
  if (!r.ok()) raise(r.status());
  return std::move(*r);
}

void check(const absl::Status& s) {
  if (!s.ok()) raise(s);
}

std::optional<DType> dtypeOfNumpy(const py::dtype& d) {
  const char kind = d.kind();
  const ssize_t size = d.itemsize();
  if (kind == 'f' && size == 4) return DType::F32;
  if (kind == 'f' && size == 2) return DType::F16;
  if (kind == 'f' && size == 8) return DType::F64;
  if (kind == 'i' && size == 8) return DType::I64;
  if (kind == 'i' && size == 4) return DType::I32;
  if (kind == 'u' && size == 1) return DType::U8;
  if (kind == 'b') return DType::Bool;
  return std::nullopt;
}

// numpy's spelling of a buffer's dtype; bf16 and the f8 types have none and come back as f32.
py::dtype numpyDtypeOf(DType t) {
  switch (t) {
    case DType::F16: return py::dtype("float16");
    case DType::I64: return py::dtype("int64");
    case DType::I32: return py::dtype("int32");
    case DType::U8: return py::dtype("uint8");
    case DType::Bool: return py::dtype("bool");
    case DType::F64: return py::dtype("float64");
    default: return py::dtype("float32");
  }
}

py::array toNumpy(const Tensor& t) {
  std::vector<ssize_t> shape(t.shape().begin(), t.shape().end());
  py::dtype dt = numpyDtypeOf(t.dtype());
  py::array out(dt, shape);
  const bool widened = t.dtype() == DType::BF16 || t.dtype() == DType::F8E4M3FN || t.dtype() == DType::F8E5M2;
  if (widened) {
    float* dst = static_cast<float*>(out.mutable_data());
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = loadAsF32(t.dtype(), t.data(), i);
  } else if (t.nbytes()) {
    std::memcpy(out.mutable_data(), t.data(), t.nbytes());
  }
  return out;
}

// A feed for buffer `b`: the array's own bytes when it is C-contiguous with the buffer's dtype and
// 64-byte aligned (the runtime's tensors are), else a copy. Shape and dtype are the caller's to
// get right: the Python layer checks them with messages that say how to fix them.
Tensor feedOf(const BufferDesc& b, const py::array& a) {
  auto dt = dtypeOfNumpy(a.dtype());
  if (!dt || *dt != b.dtype)
    throw py::type_error(absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name, "': expected ", std::string(dtypeName(b.dtype)),
                                      ", got numpy ", std::string(py::str(a.dtype()))));
  Shape shape(a.shape(), a.shape() + a.ndim());
  if (shape != b.shape)
    throw py::value_error(absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name, "': expected shape ",
                                       shapeToString(b.shape), ", got ", shapeToString(shape)));
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name, "': the array is not contiguous"));
  void* data = const_cast<void*>(a.data());
  if (reinterpret_cast<uintptr_t>(data) % 64 == 0) return Tensor::borrow(b.dtype, b.shape, data);
  Tensor copy(b.dtype, b.shape);
  if (copy.nbytes()) std::memcpy(copy.data(), data, copy.nbytes());
  return copy;
}

// The first non-finite element of a float feed, as "element I" (checked with the GIL released).
std::optional<int64_t> firstNonFinite(const Tensor& t) {
  if (t.dtype() == DType::F32) {
    const float* p = t.as<float>();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!std::isfinite(p[i])) return i;
    return std::nullopt;
  }
  if (!isFloat(t.dtype())) return std::nullopt;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(loadAsF32(t.dtype(), t.data(), i))) return i;
  return std::nullopt;
}

// The data-parallel job this process is a rank of (runtime/dist/Communicator.h): MPI when started
// by mpirun, else one rank. Joined once, on the first request; released at interpreter exit.
std::unique_ptr<Communicator>& job() {
  static std::unique_ptr<Communicator> communicator;
  return communicator;
}

py::tuple joinJob(double timeoutSeconds) {
  if (!job()) job() = valueOr(makeCommunicator(timeoutSeconds));
  return py::make_tuple(job()->rank(), job()->worldSize());
}

// The cpu device's kernels run on OpenMP's threads, whose count is a per-process setting that
// `import torch` lowers (to its own choice of threads). A session runs with its own count and puts
// the caller's back after each call.
class ScopedThreads {
 public:
  explicit ScopedThreads(int threads) : previous_(omp_get_max_threads()), set_(threads > 0) {
    if (set_) omp_set_num_threads(threads);
  }
  ~ScopedThreads() {
    if (set_) omp_set_num_threads(previous_);
  }

 private:
  int previous_;
  bool set_;
};

class PySession {
 public:
  PySession(const std::string& bundle, const std::string& device, int64_t memoryLimit, const std::string& nativeCode,
            int threads)
      : threads_(threads) {
    ScopedThreads scoped(threads_);
    // One read: the plan is parsed from the bytes whose tag authenticates its native code.
    std::string bytes;
    Plan plan = valueOr(readBundle(bundle, &bytes));
    const NativeCodePolicy policy = nativeCode == "off"     ? NativeCodePolicy::Off
                                    : nativeCode == "trust" ? NativeCodePolicy::Trust
                                                            : NativeCodePolicy::Authenticated;
    notice_ = valueOr(applyNativeCodePolicy(bundle, bytes, plan, policy));
    bytes.clear();
    bytes.shrink_to_fit();
    const Device d = valueOr(parseDevice(device));
    device_ = std::string(deviceName(d));
    session_ = std::make_unique<Session>(valueOr(openSession(std::move(plan), d, memoryLimit)));
  }

  const std::string& notice() const { return notice_; }
  const std::string& device() const { return device_; }
  std::string description() const {
    ScopedThreads scoped(threads_);
    return session_->executor().description();
  }

  // Every named buffer the model exposes: inputs, labels, params and state, in plan order.
  py::list buffers() const {
    py::list out;
    for (const BufferDesc& b : session_->plan().buffers) {
      if (b.kind == BufferKind::Temp || b.kind == BufferKind::Constant) continue;
      py::dict d;
      d["name"] = b.name;
      d["kind"] = std::string(bufferKindName(b.kind));
      d["dtype"] = std::string(dtypeName(b.dtype));
      d["shape"] = py::tuple(py::cast(b.shape));
      out.append(d);
    }
    return out;
  }

  py::dict trainingConfig() const {
    const Plan& plan = session_->plan();
    py::dict d;
    auto config = plan.trainingConfig();
    if (!config.ok()) raise(config.status());
    d["model"] = config->model;
    d["target"] = config->target;
    d["precision"] = std::string(precisionKeyword(config->precision));
    d["optimizer"] = config->optimizer ? std::string(optimizerKindKeyword(*config->optimizer)) : std::string();
    d["loss_scaling"] = std::string(scalingKindKeyword(config->lossScaling));
    d["accumulate"] = config->accumulate;
    d["data_parallel"] = config->dataParallel;
    d["lr"] = config->lr ? py::cast(*config->lr) : py::none();
    py::list entries;
    for (const EntryPoint& e : plan.entries) entries.append(e.name);
    d["entries"] = entries;
    return d;
  }

  // Runs `entry` once; its results by name, as numpy arrays.
  py::list run(const std::string& entry, const py::dict& feeds, int64_t step, bool checkNumerics) {
    std::map<std::string, Tensor> bound = bind(feeds);
    absl::StatusOr<std::vector<NamedTensor>> outputs;
    {
      py::gil_scoped_release release;
      ScopedThreads scoped(threads_);
      Session::RunOptions options;
      options.step = step;
      options.checkNumerics = checkNumerics;
      outputs = session_->run(entry, bound, options);
    }
    if (!outputs.ok()) raise(outputs.status());
    py::list out;
    for (const NamedTensor& t : *outputs) out.append(py::make_tuple(t.name, toNumpy(t.tensor)));
    return out;
  }

  // One optimizer step over `micro` (one feeds dict per micro-batch of the accumulation window).
  py::dict step(const py::list& micro, int64_t stepsDone, bool checkNumerics, bool dataParallel) {
    if (dataParallel && !job()) throw py::value_error("join the data-parallel job first (ampc._runtime.join_job)");
    std::vector<std::map<std::string, Tensor>> feeds;
    for (const py::handle& m : micro) feeds.push_back(bind(py::reinterpret_borrow<py::dict>(m)));
    absl::StatusOr<StepRecord> record;
    std::string nonFinite;
    {
      py::gil_scoped_release release;
      for (size_t k = 0; k < feeds.size() && nonFinite.empty(); ++k)
        for (const auto& [name, t] : feeds[k])
          if (auto at = firstNonFinite(t)) {
            nonFinite = absl::StrCat("'", name, "' holds a non-finite value at element ", *at, " (example ",
                                     *at / std::max<int64_t>(1, t.numel() / std::max<int64_t>(1, t.shape()[0])),
                                     " of the batch)");
            break;
          }
      if (nonFinite.empty()) {
        ScopedThreads scoped(threads_);
        Session::RunOptions options;
        options.checkNumerics = checkNumerics;
        if (dataParallel) options.communicator = job().get();
        record = runOptimizerStep(*session_, feeds, stepsDone, options);
      }
    }
    if (!nonFinite.empty()) throw py::value_error(nonFinite);
    if (!record.ok()) raise(record.status());
    py::dict d;
    d["step"] = record->step;
    d["loss"] = record->loss;
    d["skipped"] = record->foundInf;
    d["scale"] = record->scale ? py::cast(*record->scale) : py::cast(1.0);
    d["next_scale"] = record->nextScale ? py::cast(*record->nextScale) : py::cast(1.0);
    d["grad_norm"] = record->gradNorm ? py::cast(*record->gradNorm) : py::none();
    d["lr"] = record->lr ? py::cast(*record->lr) : py::none();
    d["growth_tracker"] = record->growthTracker ? py::cast(*record->growthTracker) : py::none();
    d["step_time_ms"] = record->stepTimeMs;
    return d;
  }

  // Params and state (all of it, or only the model's: params and buffers such as batch norm
  // running statistics, not what training adds), copied out.
  py::dict persistent(bool modelOnly) const {
    check(session_->syncPersistent());
    py::dict out;
    for (const NamedTensorRef& r : modelOnly ? session_->modelValues() : session_->persistent())
      out[py::str(r.name)] = toNumpy(*r.tensor);
    return out;
  }

  void setModelValues(const py::dict& values) {
    std::vector<NamedTensor> tensors;
    for (const auto& [key, value] : values) {
      std::string name = py::cast<std::string>(key);
      py::array a = py::array::ensure(value, py::array::c_style | py::array::forcecast);
      auto dt = dtypeOfNumpy(a.dtype());
      if (!dt) throw py::type_error(absl::StrCat("'", name, "': unsupported dtype ", std::string(py::str(a.dtype()))));
      Tensor t(*dt, Shape(a.shape(), a.shape() + a.ndim()));
      if (t.nbytes()) std::memcpy(t.data(), a.data(), t.nbytes());
      tensors.push_back({name, std::move(t)});
    }
    py::gil_scoped_release release;
    check(session_->setModelValues(tensors, nullptr));
  }

  void saveCheckpoint(const std::string& dir, int64_t step, uint64_t seed) {
    py::gil_scoped_release release;
    CheckpointAuth auth;
    auto key = readOrCreateUserKey();
    if (key.ok()) auth.key = std::move(*key);
    check(createCheckpointDir(dir));
    check(amp::rt::saveCheckpoint(*session_, dir, CheckpointInfo{step, seed, false, 1}, auth));
  }

  py::dict loadCheckpoint(const std::string& dir, bool trustAny) {
    absl::StatusOr<CheckpointInfo> info;
    {
      py::gil_scoped_release release;
      CheckpointAuth auth;
      auth.trustAny = trustAny;
      auto key = readOrCreateUserKey();
      if (key.ok()) auth.key = std::move(*key);
      info = amp::rt::loadCheckpoint(*session_, dir, auth);
    }
    if (!info.ok()) raise(info.status());
    py::dict d;
    d["step"] = info->step;
    d["seed"] = info->seed;
    return d;
  }

  py::dict memory() const {
    py::dict d;
    d["persistent_bytes"] = session_->persistentBytes();
    d["workspace_bytes"] = session_->workspaceBytes();
    return d;
  }

 private:
  std::map<std::string, Tensor> bind(const py::dict& feeds) const {
    std::map<std::string, Tensor> out;
    const Plan& plan = session_->plan();
    for (const auto& [key, value] : feeds) {
      std::string name = py::cast<std::string>(key);
      auto id = plan.findBuffer(name);
      if (!id || (plan.buffers[*id].kind != BufferKind::Input && plan.buffers[*id].kind != BufferKind::Label))
        throw py::key_error(absl::StrCat("the model has no input or label '", name, "'"));
      if (!py::isinstance<py::array>(value))
        throw py::type_error(absl::StrCat("'", name, "': expected a numpy array"));
      out.emplace(name, feedOf(plan.buffers[*id], py::reinterpret_borrow<py::array>(value)));
    }
    return out;
  }

  std::unique_ptr<Session> session_;
  std::string notice_, device_;
  int threads_;
};

}  // namespace

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "ampc's runtime: sessions over compiled bundles (used by the ampc package)";
  py::register_exception<RuntimeFailure>(m, "RuntimeError", PyExc_RuntimeError);
  m.def("join_job", &joinJob, py::arg("timeout_seconds") = 300.0,
        "Joins the data-parallel job (mpirun's, or one rank); returns (rank, world size).");
  m.def(
      "epoch_order",
      [](int64_t n, uint64_t seed, int64_t epoch, int rank, int world) {
        if (n < 0 || world < 1 || rank < 0 || rank >= world) throw py::value_error("epoch_order: bad arguments");
        return rankShard(epochOrder(n, seed, epoch), rank, world);
      },
      py::arg("n"), py::arg("seed"), py::arg("epoch"), py::arg("rank") = 0, py::arg("world") = 1,
      "amp-run's example order of an epoch (Philox Fisher-Yates keyed by seed and epoch), this rank's share.");
  // MPI_Finalize before the interpreter tears down the module.
  py::module_::import("atexit").attr("register")(py::cpp_function([] { job().reset(); }));
  py::class_<PySession>(m, "Session")
      .def(py::init<const std::string&, const std::string&, int64_t, const std::string&, int>(), py::arg("bundle"),
           py::arg("device") = "cpu", py::arg("memory_limit") = 0, py::arg("native_code") = "auto",
           py::arg("threads") = 0)
      .def_property_readonly("notice", &PySession::notice)
      .def_property_readonly("device", &PySession::device)
      .def_property_readonly("description", &PySession::description)
      .def("buffers", &PySession::buffers)
      .def("training_config", &PySession::trainingConfig)
      .def("run", &PySession::run, py::arg("entry"), py::arg("feeds"), py::arg("step") = 0,
           py::arg("check_numerics") = false)
      .def("step", &PySession::step, py::arg("micro"), py::arg("steps_done"), py::arg("check_numerics") = false,
           py::arg("data_parallel") = false)
      .def("persistent", &PySession::persistent, py::arg("model_only") = false)
      .def("set_model_values", &PySession::setModelValues)
      .def("save_checkpoint", &PySession::saveCheckpoint, py::arg("dir"), py::arg("step"), py::arg("seed") = 0)
      .def("load_checkpoint", &PySession::loadCheckpoint, py::arg("dir"), py::arg("trust_any") = false)
      .def("memory", &PySession::memory);
}
