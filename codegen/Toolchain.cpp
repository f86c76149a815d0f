#include "codegen/Toolchain.h"

#include <fstream>
#include <iterator>

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

namespace amp::codegen {

bool compileSharedObject(const std::string& compiler, const std::string& source, const std::string& isa,
                         std::vector<uint8_t>& bytes, std::string& error) {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("ampc-kernels", dir)) {
    error = "cannot create a temporary directory for the kernels";
    return false;
  }
  const std::string src = (dir + "/kernels.cpp").str(), out = (dir + "/kernels.so").str(),
                    log = (dir + "/compiler.log").str();
  auto cleanup = [&] {
    for (const std::string& f : {src, out, log}) llvm::sys::fs::remove(f);
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
  auto program = llvm::sys::findProgramByName(compiler);
  if (!program) {
    cleanup();
    error = "no C++ compiler '" + compiler + "' on PATH (ampc compiles fused kernels with it; "
            "install g++ or pass --native-kernels=false)";
    return false;
  }
  // -ffp-contract=off: one rounding per operation, as the reference executor (no FMA contraction).
  std::vector<std::string> args = {*program, "-std=c++17", "-O3", "-march=" + isa, "-mtune=generic",
                                   "-fPIC", "-shared", "-ffp-contract=off", "-fno-plt", "-w",
                                   "-o", out, src};
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log), llvm::StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*program, argv, std::nullopt, redirects, 0, 0, &message);
  if (rc != 0) {
    std::string cmd;
    for (const std::string& a : args) cmd += (cmd.empty() ? "" : " ") + a;
    std::ifstream l(log);
    std::string output((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    error = "compiling the fused kernels failed (" + cmd + "): " + (message.empty() ? output : message);
    cleanup();
    return false;
  }
  std::ifstream so(out, std::ios::binary);
  bytes.assign(std::istreambuf_iterator<char>(so), std::istreambuf_iterator<char>());
  cleanup();
  if (bytes.empty()) {
    error = "the compiler produced an empty shared object";
    return false;
  }
  return true;
}

}  // namespace amp::codegen
