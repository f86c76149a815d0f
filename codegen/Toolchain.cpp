#include "codegen/Toolchain.h"

#include <fstream>
#include <iterator>

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

namespace amp::codegen {

bool compileSharedObjects(const std::string& compiler, const std::string& source, const std::vector<std::string>& isas,
                          std::vector<std::vector<uint8_t>>& objects, std::string& error) {
  auto program = llvm::sys::findProgramByName(compiler);
  if (!program) {
    error = "no C++ compiler '" + compiler + "' on PATH (ampc compiles fused kernels with it; "
            "install g++ or pass --native-kernels=false)";
    return false;
  }
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("ampc-kernels", dir)) {
    error = "cannot create a temporary directory for the kernels";
    return false;
  }
  const std::string src = (dir + "/kernels.cpp").str();
  std::vector<std::string> files = {src};
  auto cleanup = [&] {
    for (const std::string& f : files) llvm::sys::fs::remove(f);
    llvm::sys::fs::remove(dir);
  };
  {
    std::ofstream f(src);
    f << source;
    if (!f) {
      cleanup();
      error = "cannot write " + src;
      return false;
    }
  }
  struct Job {
    std::vector<std::string> args;
    std::string out, log;
    llvm::sys::ProcessInfo process;
  };
  std::vector<Job> jobs(isas.size());
  for (size_t i = 0; i < isas.size(); ++i) {
    Job& job = jobs[i];
    job.out = (dir + "/kernels-" + isas[i] + ".so").str();
    job.log = (dir + "/compiler-" + isas[i] + ".log").str();
    files.push_back(job.out);
    files.push_back(job.log);
    // -ffp-contract=off: one rounding per operation, as the reference executor (no FMA contraction).
    // AMP_TARGET_ISA records the level inside the object (KernelEmitter's note and table);
    // -fvisibility=hidden leaves the kernel table as the object's only export.
    job.args = {*program, "-std=c++17", "-O3", "-march=" + isas[i], "-mtune=generic", "-fPIC", "-shared",
                "-ffp-contract=off", "-fno-plt", "-fvisibility=hidden", "-DAMP_TARGET_ISA=\"" + isas[i] + "\"", "-w",
                "-o", job.out, src};
    std::vector<llvm::StringRef> argv(job.args.begin(), job.args.end());
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(job.log), llvm::StringRef(job.log)};
    std::string message;
    job.process = llvm::sys::ExecuteNoWait(*program, argv, std::nullopt, redirects, 0, &message);
    if (job.process.Pid == llvm::sys::ProcessInfo::InvalidPid) {
      error = "cannot run " + *program + ": " + message;
      for (size_t k = 0; k < i; ++k) llvm::sys::Wait(jobs[k].process, std::nullopt);
      cleanup();
      return false;
    }
  }
  bool ok = true;
  objects.assign(isas.size(), {});
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& job = jobs[i];
    std::string message;
    llvm::sys::ProcessInfo done = llvm::sys::Wait(job.process, std::nullopt, &message);
    if (done.ReturnCode != 0) {
      if (ok) {
        std::string cmd;
        for (const std::string& a : job.args) cmd += (cmd.empty() ? "" : " ") + a;
        std::ifstream l(job.log);
        std::string output((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
        error = "compiling the fused kernels failed (" + cmd + "): " + (output.empty() ? message : output);
      }
      ok = false;
      continue;
    }
    std::ifstream so(job.out, std::ios::binary);
    objects[i].assign(std::istreambuf_iterator<char>(so), std::istreambuf_iterator<char>());
    if (objects[i].empty() && ok) {
      error = "the compiler produced an empty shared object";
      ok = false;
    }
  }
  cleanup();
  return ok;
}

bool compileSharedObject(const std::string& compiler, const std::string& source, const std::string& isa,
                         std::vector<uint8_t>& bytes, std::string& error) {
  std::vector<std::vector<uint8_t>> objects;
  if (!compileSharedObjects(compiler, source, {isa}, objects, error)) return false;
  bytes = std::move(objects[0]);
  return true;
}

}  // namespace amp::codegen
