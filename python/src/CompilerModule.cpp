// ampc._compiler: the ampc driver (tools/ampc/Driver.h) in process, for ampc.compile. It takes
// ampc's own command line (the Python layer builds it from typed keyword arguments) and returns
// the exit code with the diagnostics the driver wrote, located as ampc prints them; the Python
// layer raises ampc.CompileError with them. LLVM's options are process-global, so calls are
// serialised.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <string>
#include <vector>

#include "llvm/Support/raw_ostream.h"
#include "tools/ampc/Driver.h"

namespace py = pybind11;

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "ampc's compiler driver, in process (used by ampc.compile)";
  m.def(
      "run_ampc",
      [](const std::vector<std::string>& args) {
        static std::mutex mutex;
        std::string diagnostics;
        int rc = 0;
        {
          py::gil_scoped_release release;
          std::lock_guard<std::mutex> lock(mutex);
          std::vector<const char*> argv{"ampc"};
          for (const std::string& a : args) argv.push_back(a.c_str());
          llvm::raw_string_ostream errs(diagnostics);
          rc = mlir::amp::runAmpc(static_cast<int>(argv.size()), argv.data(), errs);
          errs.flush();
        }
        return py::make_tuple(rc, diagnostics);
      },
      py::arg("args"), "Runs ampc with `args`; returns (exit code, diagnostics).");
}
