#!/usr/bin/env python3
"""Checks that arrows point down: every project include of every source file in a room, and every
CMake link edge of every library a room defines, is one the room may depend on (docs/design.md,
"Rooms and the arrows between them").

    check_layering.py ROOT        the tree; exit 1 listing every upward include and link edge
    check_layering.py --self-test proves that a tree with an upward include or link fails the check
"""
import os
import re
import sys
import tempfile

# Rooms, most specific first. A file belongs to the first room whose prefix its path starts with.
CORE = "the runtime core"  # the files directly in the runtime folder: DType and Tensor
ROOMS = [
    "runtime/schema", "runtime/kernels/math", "runtime/kernels/cuda", "runtime/numerics", "runtime/io", "runtime/dist", "runtime/plan",
    "runtime/exec", "runtime/reference", "runtime/devices/cpu/kernels/avx2", "runtime/devices/cpu/kernels/avx512",
    "runtime/devices/cpu/kernels", "runtime/devices/cpu/steps", "runtime/devices/cpu", "runtime/devices/cuda",
    "runtime/devices", "runtime/train", "ir", "passes", "codegen", "import",
]

# What each room may include besides itself and the runtime core. An entry ending in ".h" is one
# header: the only door into its room.
BELOW_PLAN = ["runtime/schema", "runtime/numerics", "runtime/io"]
ALLOWED = {
    "runtime/schema": [],
    CORE: [],
    # The maths every device shares, host- and device-compilable, and the CUDA library built on it.
    "runtime/kernels/math": [],
    "runtime/kernels/cuda": ["runtime/kernels/math"],
    "runtime/numerics": ["runtime/schema", "runtime/kernels/math"],
    "runtime/io": ["runtime/numerics"],
    "runtime/dist": ["runtime/numerics", "runtime/io"],
    "runtime/plan": BELOW_PLAN,
    "runtime/exec": BELOW_PLAN + ["runtime/plan", "runtime/dist"],
    "runtime/reference": BELOW_PLAN + ["runtime/plan", "runtime/dist", "runtime/exec", "runtime/kernels/math"],
    # A device reaches the oracle only through its executor's header (fallback steps), and never
    # another device. The cpu device's inner plan: its kernels know nothing of plans or steps, and
    # each ISA's files only the kernels they implement (the dispatchers declare, never include,
    # them); steps use kernels and the executor's step interface; the executor never includes a
    # step (it reaches them through the factories CpuStep.h declares).
    "runtime/devices/cpu/kernels/avx2": BELOW_PLAN + ["runtime/devices/cpu/kernels"],
    "runtime/devices/cpu/kernels/avx512": BELOW_PLAN + ["runtime/devices/cpu/kernels"],
    "runtime/devices/cpu/kernels": BELOW_PLAN + ["runtime/kernels/math"],
    "runtime/devices/cpu/steps": BELOW_PLAN + ["runtime/plan", "runtime/dist", "runtime/kernels/math",
                                               "runtime/devices/cpu", "runtime/devices/cpu/kernels"],
    "runtime/devices/cpu": BELOW_PLAN + ["runtime/plan", "runtime/dist", "runtime/exec", "runtime/kernels/math",
                                         "runtime/reference/ReferenceExecutor.h", "runtime/devices/cpu/kernels"],
    "runtime/devices/cuda": BELOW_PLAN + ["runtime/plan", "runtime/dist", "runtime/exec", "runtime/kernels/math",
                                          "runtime/kernels/cuda", "runtime/reference/ReferenceExecutor.h"],
    # The registry sees every device.
    "runtime/devices": BELOW_PLAN + ["runtime/plan", "runtime/dist", "runtime/exec",
                                     "runtime/reference/ReferenceExecutor.h", "runtime/devices/cpu",
                                     "runtime/devices/cuda"],
    "runtime/train": BELOW_PLAN + ["runtime/plan", "runtime/dist", "runtime/exec"],
    "ir": [],
    # The compiler shares only the contract with the runtime: target, plan and file formats.
    "passes": ["ir", "runtime/schema"],
    "codegen": ["ir", "passes", "runtime/schema", "runtime/numerics", "runtime/io", "runtime/plan",
                "runtime/kernels/math"],
    "import": ["ir", "passes"],
}
SOURCE = re.compile(r".*\.(h|cpp|inc|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PROJECT_TOP = ("runtime/", "ir/", "passes/", "codegen/", "import/", "tools/")


def room_of(path):
    if path.startswith("runtime/") and path.count("/") == 1:
        return CORE
    for room in ROOMS:
        if path.startswith(room + "/"):
            return room
    return None


def allowed(room, target):
    target_room = room_of(target)
    if target_room in (room, CORE):
        return True
    for entry in ALLOWED[room]:
        if entry.endswith(".h") and target == entry:
            return True
        # A room entry opens that room only, not the rooms nested in it: cpu/steps may include
        # cpu/kernels, not cpu/kernels/avx2.
        if target_room == entry:
            return True
    return False


def check(root):
    errors = []
    files = 0
    for top in ("runtime", "ir", "passes", "codegen", "import"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if not SOURCE.match(name):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                room = room_of(rel)
                if room is None:
                    continue
                files += 1
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    target = m.group(1)
                    # Generated headers (build root) and third-party headers are not rooms.
                    if not target.startswith(PROJECT_TOP) or target.endswith(".h.inc") or target.endswith(".cpp.inc"):
                        continue
                    if target.startswith("tools/"):
                        errors.append(f"{rel}: includes {target}: nothing may include a tool")
                    elif not allowed(room, target):
                        line = text.count("\n", 0, m.start()) + 1
                        errors.append(f"{rel}:{line}: {room} may not include {target} "
                                      f"(allowed: {', '.join(ALLOWED[room]) or 'nothing outside itself'})")
    return files, errors


LIBRARY = re.compile(r"\b(?:add_library|add_mlir_library|add_mlir_dialect_library)\(\s*([A-Za-z0-9_]+)([^)]*)\)", re.S)
LINK = re.compile(r"\btarget_link_libraries\(\s*([A-Za-z0-9_]+)([^)]*)\)", re.S)
KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE", "LINK_LIBS", "LINK_COMPONENTS", "DEPENDS", "STATIC", "SHARED",
            "OBJECT"}


def cmake_files(root):
    for top in ("runtime", "ir", "passes", "codegen", "import"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            if "CMakeLists.txt" in names:
                path = os.path.join(dirpath, "CMakeLists.txt")
                with open(path, encoding="utf-8") as f:
                    # Comments out: they may name targets.
                    yield os.path.relpath(dirpath, root), re.sub(r"#[^\n]*", "", f.read())


def link_edges(root):
    """The project's libraries: {target: (room, interface_only)}, and their link edges [(from, to, file)]."""
    targets, edges = {}, []
    for folder, text in cmake_files(root):
        room = room_of(folder + "/CMakeLists.txt")
        for m in LIBRARY.finditer(text):
            words = m.group(2).split()
            targets[m.group(1)] = (room, "INTERFACE" in words[:1])
            if m.group(0).startswith("add_mlir") and "LINK_LIBS" in words:  # LINK_LIBS up to the next keyword
                for word in words[words.index("LINK_LIBS") + 1:]:
                    if word in KEYWORDS - {"PUBLIC", "PRIVATE", "INTERFACE"}:
                        break
                    edges.append((m.group(1), word, folder))
        for m in LINK.finditer(text):
            edges += [(m.group(1), word, folder) for word in m.group(2).split() if word not in KEYWORDS]
    return targets, edges


def check_links(root):
    """Every link edge from a library in a room to a project library must point to a room it may include.
    An INTERFACE library (the runtime's umbrella) stands for everything it links."""
    targets, edges = link_edges(root)
    links = {}
    for src, dst, _ in edges:
        links.setdefault(src, []).append(dst)

    def expand(name, seen):
        if name not in targets or name in seen:
            return []
        seen.add(name)
        if not targets[name][1]:
            return [name]
        return [t for d in links.get(name, []) for t in expand(d, seen)]

    errors = []
    for src, dst, folder in edges:
        if src not in targets or targets[src][0] is None or targets[src][1]:
            continue
        room = targets[src][0]
        for reached in expand(dst, set()):
            target_room = targets[reached][0]
            if target_room is None or target_room in (room, CORE):
                continue
            if not any(entry == target_room or (entry.endswith(".h") and entry.startswith(target_room + "/"))
                       for entry in ALLOWED[room]):
                via = "" if reached == dst else f" (through {dst})"
                errors.append(f"{folder}/CMakeLists.txt: {src} ({room}) may not link {reached} ({target_room}){via}")
    return len(edges), errors


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        # Paths joined from parts: made up for the test, they are not citations of this tree.
        kernel = os.path.join("runtime", "devices", "cpu", "Kernel.cpp")
        policy = os.path.join("passes", "Policy.cpp")
        bad = os.path.join("runtime", "plan", "Bad.cpp")
        write("runtime/plan/Plan.h", '#include "runtime/io/Json.h"\n')
        write("runtime/io/Json.h", "\n")
        write("runtime/exec/Executor.h", '#include "runtime/plan/Plan.h"\n')
        write(kernel, '#include "runtime/reference/ReferenceExecutor.h"\n#include "runtime/reference/ReferenceCommon.h"\n'
                      '#include "runtime/devices/cuda/GpuApi.h"\n')
        write(policy, '#include "runtime/devices/cpu/kernels/Gemm.h"\n#include "runtime/schema/CpuFeatures.h"\n')
        write(bad, '#include "runtime/exec/Executor.h"\n')
        # The cpu device's inner rooms: a step may use the executor's step interface and the
        # kernels, not one ISA's files; a kernel knows no plan; one ISA's file not another's.
        cpu = os.path.join("runtime", "devices", "cpu")
        step = os.path.join(cpu, "steps", "Step.cpp")
        loop = os.path.join(cpu, "kernels", "Loop.cpp")
        avx2 = os.path.join(cpu, "kernels", "avx2", "LoopAvx2.cpp")
        write(step, '#include "' + os.path.join(cpu, "Step.h") + '"\n#include "' + os.path.join(cpu, "kernels", "Loop.h") +
              '"\n#include "' + os.path.join(cpu, "kernels", "avx2", "LoopAvx2.h") + '"\n')
        write(loop, '#include "runtime/plan/Plan.h"\n#include "runtime/schema/CpuFeatures.h"\n')
        write(avx2, '#include "' + os.path.join(cpu, "kernels", "Loop.h") + '"\n#include "' +
              os.path.join(cpu, "kernels", "avx512", "LoopAvx512.h") + '"\n')
        _, errors = check(root)
        want = [kernel + ":2", kernel + ":3", policy + ":1", bad + ":1", step + ":3", loop + ":1", avx2 + ":2"]
        got = sorted(e.split(": ")[0] for e in errors)
        if got != sorted(want):
            print("self-test: expected violations", sorted(want), "got", got)
            for e in errors:
                print("  ", e)
            return 1
        # Link edges: a compiler library that reaches a device through the runtime's umbrella, and
        # one that links an executor directly, fail; the plan it may link does not.
        write("runtime/CMakeLists.txt", "add_library(Core STATIC A.cpp)\nadd_library(Umbrella INTERFACE)\n")
        write("runtime/plan/CMakeLists.txt", "add_library(Plan STATIC P.cpp)\ntarget_link_libraries(Plan PUBLIC Core)\n"
                                             "target_link_libraries(Umbrella INTERFACE Plan)\n")
        write(os.path.join("runtime/devices/cpu", "CMakeLists.txt"), "add_library(Cpu STATIC C.cpp)\n"
                                                    "target_link_libraries(Umbrella INTERFACE Cpu)\n")
        write("runtime/exec/CMakeLists.txt", "add_library(Exec STATIC E.cpp)\n")
        write("codegen/CMakeLists.txt", "add_mlir_library(Gen G.cpp\n  LINK_LIBS PUBLIC\n  Umbrella\n  Plan\n)\n"
                                        "add_library(Gen2 STATIC H.cpp)\ntarget_link_libraries(Gen2 PRIVATE Exec Plan)\n")
        _, link_errors = check_links(root)
        want = ["Gen (codegen) may not link Cpu (runtime/devices/cpu) (through Umbrella)",
                "Gen2 (codegen) may not link Exec (runtime/exec)"]
        got = sorted(e.split(": ", 1)[1] for e in link_errors)
        if got != want:
            print("self-test: expected link violations", want, "got", got)
            return 1
    print("self-test: the check reports each upward include and link edge, and nothing else")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    files, errors = check(argv[1])
    edges, link_errors = check_links(argv[1])
    for e in errors + link_errors:
        print(e)
    print(f"layering: {files} files, {len(errors)} upward includes; {edges} link edges, {len(link_errors)} upward")
    return 1 if errors or link_errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
