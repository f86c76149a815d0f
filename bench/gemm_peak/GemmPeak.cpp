// amp-bench-gemm: GFLOP/s of the cpu device's own Gemm (runtime/devices/cpu/kernels/Gemm.h) on the training
// GEMMs of the benchmarked MLPs, against the machine's measured peak (a large square GEMM) per
// dtype. Prints JSON lines on stdout (bench/README.md; bench/run.py prints them as a table).
//
//   amp-bench-gemm [--quick] [--peak-size=N]
//
// Threads: oneDNN's OpenMP pool, i.e. OMP_NUM_THREADS.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/DType.h"
#include "runtime/schema/CpuFeatures.h"
#include "runtime/devices/cpu/kernels/Gemm.h"
#include "runtime/numerics/Convert.h"

namespace {

using amp::rt::DType;
using amp::rt::CpuFeatures;
using amp::rt::cpu::Gemm;
using amp::rt::cpu::GemmDesc;

struct Options {
  bool quick = false;
  int64_t peakSize = 2048;
  double minSeconds = 0.2;  // time at least this long ...
  int minReps = 20;         // ... and at least this many calls
  // Warm-up by time as well as count: the first calls of a process also pay for page faults and
  // clock ramp-up, which would otherwise land in the peak (measured first).
  double warmupSeconds = 0.1;
  int warmupReps = 3;
};

// 64-byte aligned (oneDNN's preferred alignment, and what Gemm::run asks of scratch).
struct AlignedBuffer {
  std::unique_ptr<void, decltype(&std::free)> ptr{nullptr, &std::free};
  explicit AlignedBuffer(size_t bytes) {
    if (bytes == 0) return;
    ptr.reset(std::aligned_alloc(64, (bytes + 63) / 64 * 64));  // size must be a multiple of 64
    if (!ptr) {
      std::fprintf(stderr, "amp-bench-gemm: out of memory (%zu bytes)\n", bytes);
      std::exit(1);
    }
  }
  void* get() const { return ptr.get(); }
};

// Deterministic values in [-1, 1) (splitmix64), rounded to `dtype`, so every run sees the same data.
AlignedBuffer randomBuffer(DType dtype, int64_t n, uint64_t seed) {
  std::vector<float> values(static_cast<size_t>(n));
  uint64_t state = seed;
  for (float& v : values) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v = static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;  // 24 random bits
  }
  AlignedBuffer out(static_cast<size_t>(n) * amp::rt::dtypeSize(dtype));
  amp::rt::convertBuffer(DType::F32, values.data(), dtype, out.get(), n);
  return out;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string jsonNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// One GEMM as the cpu device runs it: m x n x k, with the operand layout of the training step.
struct GemmCase {
  std::string model, gemm;  // model empty for the peak
  DType dtype;
  int64_t m, n, k;
  bool transA = false, transB = false, bias = false;
};

struct Measurement {
  double ms = 0, minMs = 0, gflops = 0;  // ms: median per call
  std::string impl;
};

// Creates the Gemm, warms it up, then times single calls until both minSeconds and minReps are
// reached; the median per-call time resists the occasional preempted call on a busy machine.
std::optional<Measurement> measure(const GemmCase& c, const CpuFeatures& features, const Options& opt) {
  GemmDesc desc;
  desc.dtype = c.dtype;
  desc.a = c.transA ? amp::rt::Shape{c.k, c.m} : amp::rt::Shape{c.m, c.k};
  desc.b = c.transB ? amp::rt::Shape{c.n, c.k} : amp::rt::Shape{c.k, c.n};
  desc.transA = c.transA;
  desc.transB = c.transB;
  desc.bias = c.bias;
  auto gemm = Gemm::create(desc, features);
  if (!gemm.ok()) {
    std::printf("{\"kind\":\"error\",\"model\":%s,\"gemm\":%s,\"dtype\":%s,\"error\":%s}\n",
                jsonString(c.model).c_str(), jsonString(c.gemm).c_str(),
                jsonString(std::string(amp::rt::dtypeName(c.dtype))).c_str(),
                jsonString(gemm.status().ToString()).c_str());
    return std::nullopt;
  }
  AlignedBuffer a = randomBuffer(c.dtype, c.m * c.k, 1), b = randomBuffer(c.dtype, c.k * c.n, 2);
  AlignedBuffer bias = randomBuffer(c.dtype, c.bias ? c.n : 0, 3);
  AlignedBuffer out(static_cast<size_t>(c.m * c.n) * amp::rt::dtypeSize(c.dtype));
  AlignedBuffer scratch((*gemm)->scratchBytes());
  auto call = [&] { (*gemm)->run(a.get(), b.get(), c.bias ? bias.get() : nullptr, out.get(), scratch.get()); };

  using Clock = std::chrono::steady_clock;
  auto elapsedSince = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const Clock::time_point warmupStart = Clock::now();
  for (int i = 0; i < opt.warmupReps || elapsedSince(warmupStart) < opt.warmupSeconds; ++i) call();

  std::vector<double> seconds;
  const Clock::time_point start = Clock::now();
  while (static_cast<int>(seconds.size()) < opt.minReps || elapsedSince(start) < opt.minSeconds) {
    const Clock::time_point t0 = Clock::now();
    call();
    seconds.push_back(elapsedSince(t0));
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  const double median = seconds[seconds.size() / 2];
  Measurement r;
  r.ms = median * 1e3;
  r.minMs = *std::min_element(seconds.begin(), seconds.end()) * 1e3;
  r.gflops = 2.0 * double(c.m) * double(c.n) * double(c.k) / median * 1e-9;
  r.impl = (*gemm)->implName();
  return r;
}

// The Linear layers [in, out] of the MLPs bench/run.py trains (weights stored [in, out], as ampc's
// amp.linear with transpose_w = false).
struct Mlp {
  std::vector<int64_t> widths;
  int64_t batch;
  std::string id() const {
    std::string s = "mlp_";
    for (size_t i = 0; i < widths.size(); ++i) s += (i ? "-" : "") + std::to_string(widths[i]);
    return s + "_b" + std::to_string(batch);
  }
};

// Per layer: fwd y = x[B,in]·W[in,out] + bias (the bias in the GEMM epilogue, as the device runs
// amp.linear); dx = dy[B,out]·Wᵀ (transB); dw = xᵀ·dy (transA).
std::vector<GemmCase> trainingGemms(const Mlp& mlp, DType dtype) {
  std::vector<GemmCase> cases;
  const std::string model = mlp.id();
  for (size_t l = 0; l + 1 < mlp.widths.size(); ++l) {
    const int64_t in = mlp.widths[l], out = mlp.widths[l + 1], batch = mlp.batch;
    const std::string layer = "fc" + std::to_string(l + 1);
    cases.push_back({model, layer + ".fwd", dtype, batch, out, in, false, false, true});
    cases.push_back({model, layer + ".dx", dtype, batch, in, out, false, true, false});
    cases.push_back({model, layer + ".dw", dtype, in, out, batch, true, false, false});
  }
  return cases;
}

void printUsage(FILE* to) {
  std::fprintf(to,
               "usage: amp-bench-gemm [--quick] [--peak-size=N]\n"
               "GFLOP/s of the cpu device's Gemm on the MLP training GEMMs (f32, bf16, f16) against\n"
               "the measured peak of an N^3 GEMM (default 2048; f32 and bf16). JSON lines on stdout.\n"
               "  --quick        fewer repetitions, peak size 1024\n"
               "  --peak-size=N  the square GEMM that defines the peak\n"
               "Threads: OMP_NUM_THREADS.\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::optional<int64_t> peakSizeFlag;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      printUsage(stdout);
      return 0;
    } else if (arg == "--quick") {
      opt.quick = true;
    } else if (arg.rfind("--peak-size=", 0) == 0) {
      const std::string value = arg.substr(std::strlen("--peak-size="));
      char* end = nullptr;
      const long long n = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n <= 0 || n > 65536) {
        std::fprintf(stderr, "amp-bench-gemm: --peak-size needs an integer in 1..65536, got '%s'\n", value.c_str());
        return 2;
      }
      peakSizeFlag = n;
    } else {
      std::fprintf(stderr, "amp-bench-gemm: unknown argument '%s'\n", arg.c_str());
      printUsage(stderr);
      return 2;
    }
  }
  if (opt.quick) {
    opt.peakSize = 1024;
    opt.minSeconds = 0.05;
    opt.minReps = 5;
    opt.warmupSeconds = 0.02;
    opt.warmupReps = 1;
  }
  if (peakSizeFlag) opt.peakSize = *peakSizeFlag;

  const CpuFeatures& features = CpuFeatures::host();
  std::printf("{\"kind\":\"env\",\"threads\":%d,\"cpu\":%s,\"isa\":%s,\"native_bf16\":%s,\"quick\":%s}\n",
              omp_get_max_threads(), jsonString(features.summary()).c_str(),
              jsonString(features.isaLevel()).c_str(), features.nativeBf16() ? "true" : "false",
              opt.quick ? "true" : "false");
  std::fflush(stdout);

  bool allOk = true;
  std::map<DType, double> peakGflops;
  for (DType dtype : {DType::F32, DType::BF16}) {
    const GemmCase c{"", "peak", dtype, opt.peakSize, opt.peakSize, opt.peakSize};
    const auto r = measure(c, features, opt);
    if (!r) {
      allOk = false;
      continue;
    }
    peakGflops[dtype] = r->gflops;
    std::printf("{\"kind\":\"peak\",\"dtype\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"ms\":%s,\"min_ms\":%s,\"gflops\":%s,\"impl\":%s}\n",
                std::string(amp::rt::dtypeName(dtype)).c_str(), (long long)c.m, (long long)c.n, (long long)c.k,
                jsonNumber(r->ms).c_str(), jsonNumber(r->minMs).c_str(), jsonNumber(r->gflops).c_str(),
                jsonString(r->impl).c_str());
    std::fflush(stdout);
  }

  const std::vector<Mlp> models = {{{784, 256, 256, 10}, 128}, {{784, 256, 256, 10}, 256}, {{784, 1024, 1024, 10}, 256}};
  for (const Mlp& mlp : models) {
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      // f16 has no native path: it runs widened to f32, so the f32 peak is its ceiling.
      const DType peakDtype = dtype == DType::F16 ? DType::F32 : dtype;
      for (const GemmCase& c : trainingGemms(mlp, dtype)) {
        const auto r = measure(c, features, opt);
        if (!r) {
          allOk = false;
          continue;
        }
        const auto peak = peakGflops.find(peakDtype);
        const std::string fraction = peak == peakGflops.end() ? "null" : jsonNumber(r->gflops / peak->second);
        std::printf("{\"kind\":\"shape\",\"model\":%s,\"gemm\":%s,\"dtype\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
                    "\"ms\":%s,\"min_ms\":%s,\"gflops\":%s,\"peak_fraction\":%s,\"peak_dtype\":\"%s\",\"impl\":%s}\n",
                    jsonString(c.model).c_str(), jsonString(c.gemm).c_str(),
                    std::string(amp::rt::dtypeName(dtype)).c_str(), (long long)c.m, (long long)c.n, (long long)c.k,
                    jsonNumber(r->ms).c_str(), jsonNumber(r->minMs).c_str(), jsonNumber(r->gflops).c_str(), fraction.c_str(),
                    std::string(amp::rt::dtypeName(peakDtype)).c_str(), jsonString(r->impl).c_str());
        std::fflush(stdout);
      }
    }
  }
  return allOk ? 0 : 1;
}
