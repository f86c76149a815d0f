// The fibers of BlockEmulation.h: one stack per thread of a block, switched by hand (x86-64: six
// callee-saved registers and the stack pointer), which is cheap enough for blocks of 256 threads
// and kernels with a barrier per 256 elements. ucontext would do a signal-mask system call on
// every switch.
#include "test/unit/common/BlockEmulation.h"

#include <memory>
#include <vector>

#if !defined(__x86_64__)
#error "BlockEmulation.cpp switches fibers with x86-64 code"
#endif

// Saves the callee-saved registers on the running stack and its pointer in *save, then resumes the
// stack at `load` (saved the same way, or prepared by prepareStack).
extern "C" void amp_emu_switch(void** save, void* load);
asm(R"(
.text
.globl amp_emu_switch
.type amp_emu_switch,@function
amp_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size amp_emu_switch, .-amp_emu_switch
)");

namespace amp::emu {

Index3 gThreadIdx, gBlockIdx;
Dim3 gBlockDim, gGridDim;

namespace {

constexpr size_t kStackBytes = 128 * 1024;

struct Fiber {
  std::unique_ptr<char[]> stack;
  void* sp = nullptr;
  bool done = false;
  bool atBarrier = false;
};

std::vector<Fiber> fibers;
void* schedulerSp = nullptr;
size_t current = 0;
const std::function<void()>* kernelBody = nullptr;

[[noreturn]] void fiberEntry() {
  (*kernelBody)();
  fibers[current].done = true;
  amp_emu_switch(&fibers[current].sp, schedulerSp);
  __builtin_unreachable();
}

// A stack that amp_emu_switch resumes into fiberEntry, aligned as after a call (rsp + 8 a multiple of 16).
void* prepareStack(char* stack) {
  auto top = reinterpret_cast<uintptr_t>(stack + kStackBytes) & ~uintptr_t{15};
  auto* slot = reinterpret_cast<void**>(top);
  *--slot = nullptr;                                      // fiberEntry's return address: never used
  *--slot = reinterpret_cast<void*>(&fiberEntry);         // where the switch's ret goes
  for (int r = 0; r < 6; ++r) *--slot = nullptr;          // rbp, rbx, r12-r15
  return slot;
}

// The next coordinate of a linear index, x first.
unsigned nextCoord(unsigned extent, size_t& rest) {
  const auto c = static_cast<unsigned>(rest % extent);
  rest /= extent;
  return c;
}

// Runs one block to its end; returns "" or the divergent barrier it found.
std::string runBlock(size_t threads, Schedule schedule) {
  if (fibers.size() < threads) fibers.resize(threads);
  for (size_t t = 0; t < threads; ++t) {
    Fiber& f = fibers[t];
    if (!f.stack) f.stack.reset(new char[kStackBytes]);  // untouched pages cost nothing
    f.sp = prepareStack(f.stack.get());
    f.done = false;
    f.atBarrier = false;
  }
  std::string error;
  for (int phase = 0;; ++phase) {
    size_t waiting = 0, returned = 0;
    for (size_t k = 0; k < threads; ++k) {
      const size_t t = schedule == Schedule::Forward ? k : threads - 1 - k;
      Fiber& f = fibers[t];
      if (f.done) {
        ++returned;
        continue;
      }
      f.atBarrier = false;
      current = t;
      size_t rest = t;
      gThreadIdx.x = nextCoord(gBlockDim.x, rest);
      gThreadIdx.y = nextCoord(gBlockDim.y, rest);
      gThreadIdx.z = nextCoord(gBlockDim.z, rest);
      amp_emu_switch(&schedulerSp, f.sp);
      if (f.atBarrier) ++waiting;
      else ++returned;
    }
    if (waiting == 0) return error;
    if (returned > 0 && error.empty())
      error = "block (" + std::to_string(gBlockIdx.x) + ", " + std::to_string(gBlockIdx.y) + ", " +
              std::to_string(gBlockIdx.z) + "): " + std::to_string(waiting) + " threads wait at barrier " +
              std::to_string(phase) + " that " + std::to_string(returned) + " threads never reach";
  }
}

}  // namespace

void syncthreads() {
  fibers[current].atBarrier = true;
  amp_emu_switch(&fibers[current].sp, schedulerSp);
}

std::string launch(Dim3 grid, Dim3 block, const std::function<void()>& kernel, Schedule schedule) {
  gGridDim = grid;
  gBlockDim = block;
  kernelBody = &kernel;
  const size_t threads = size_t{block.x} * block.y * block.z;
  const size_t blocks = size_t{grid.x} * grid.y * grid.z;
  std::string error;
  for (size_t k = 0; k < blocks; ++k) {
    size_t rest = schedule == Schedule::Forward ? k : blocks - 1 - k;
    gBlockIdx.x = nextCoord(grid.x, rest);
    gBlockIdx.y = nextCoord(grid.y, rest);
    gBlockIdx.z = nextCoord(grid.z, rest);
    std::string blockError = runBlock(threads, schedule);
    if (error.empty()) error = std::move(blockError);
  }
  kernelBody = nullptr;
  return error;
}

}  // namespace amp::emu
