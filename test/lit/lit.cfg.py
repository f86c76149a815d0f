# -*- Python -*-
# lit configuration for ampc: FileCheck tests of the dialect, passes and tools.
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "AMP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.amp_obj_root, "test", "lit")
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

llvm_config.use_default_substitutions()
config.substitutions.append(("%amp_src_root", config.amp_src_root))
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["amp-opt", "ampc", "amp-run"], [config.amp_tools_dir, config.llvm_tools_dir])
# lit passes no HOME: the tests' ampc authenticates bundles with a key of the build tree (created on
# first use), which their amp-run checks them with (docs/plan-format.md, "Authentication").
config.environment["AMP_KEY_FILE"] = os.path.join(config.amp_obj_root, "test", "lit", "ampc-test.key")
# The CPU level a run is lowered to (scripts/cpu-level-tests.sh) reaches the tools: what
# `--precision=auto` and the cpu device detect, and what oneDNN dispatches to.
for name in ("AMP_CPU_FEATURES", "ONEDNN_MAX_CPU_ISA"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
# `REQUIRES: nvrtc`: this ampc was built with the CUDA toolkit, so it compiles the kernels of
# cuda:sm_80/sm_90 bundles with NVRTC (no GPU needed).
if getattr(config, "amp_have_cuda", "OFF").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("nvrtc")
# `UNSUPPORTED: asan`: the tools were built with AddressSanitizer (scripts/sanitize.sh).
if getattr(config, "amp_asan", "OFF").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("asan")
