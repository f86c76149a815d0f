#include "test/unit/cpu/OneDnnCalls.h"

#include <dlfcn.h>

#include <atomic>

#include "dnnl.h"

namespace {

std::atomic<int> gDepth{0};
std::atomic<int64_t> gCalls{0};

// Entered before the real function is looked up, so dlsym's own first-call allocations count as
// oneDNN's too.
struct InOneDnn {
  InOneDnn() {
    gDepth.fetch_add(1, std::memory_order_seq_cst);
    gCalls.fetch_add(1, std::memory_order_relaxed);
  }
  ~InOneDnn() { gDepth.fetch_sub(1, std::memory_order_seq_cst); }
  InOneDnn(const InOneDnn&) = delete;
  InOneDnn& operator=(const InOneDnn&) = delete;
};

// The next definition after this binary's: libdnnl's.
template <typename Fn>
Fn real(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

// Definitions in the executable take precedence over libdnnl's for every caller in the process.
extern "C" {

dnnl_status_t dnnl_primitive_execute(const_dnnl_primitive_t primitive, dnnl_stream_t stream, int nargs,
                                     const dnnl_exec_arg_t* args) {
  InOneDnn scope;
  static const auto fn = real<decltype(&dnnl_primitive_execute)>("dnnl_primitive_execute");
  return fn(primitive, stream, nargs, args);
}

dnnl_status_t dnnl_stream_wait(dnnl_stream_t stream) {
  InOneDnn scope;
  static const auto fn = real<decltype(&dnnl_stream_wait)>("dnnl_stream_wait");
  return fn(stream);
}

dnnl_status_t dnnl_memory_set_data_handle_v2(dnnl_memory_t memory, void* handle, dnnl_stream_t stream) {
  InOneDnn scope;
  static const auto fn = real<decltype(&dnnl_memory_set_data_handle_v2)>("dnnl_memory_set_data_handle_v2");
  return fn(memory, handle, stream);
}

}  // extern "C"

namespace amp::test {

bool insideOneDnn() { return gDepth.load(std::memory_order_seq_cst) > 0; }

int64_t oneDnnCalls() { return gCalls.load(std::memory_order_relaxed); }

}  // namespace amp::test
