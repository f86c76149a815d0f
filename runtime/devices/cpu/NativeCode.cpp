#include "runtime/devices/cpu/NativeCode.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/io/Sha256.h"

namespace amp::rt::cpu {

absl::StatusOr<std::unique_ptr<NativeLibrary>> NativeLibrary::load(const Plan& plan, const CpuFeatures& features) {
  const CodeObject* chosen = nullptr;
  const std::string level = features.isaLevel();
  for (const char* isa : {"x86-64-v4", "x86-64-v3"}) {
    if (std::string(isa) == "x86-64-v4" && level != "x86-64-v4") continue;
    if (level == "x86-64") break;
    for (const CodeObject& c : plan.code)
      if (c.isa == isa && c.format == "so" && !chosen) chosen = &c;
  }
  if (!chosen) return std::unique_ptr<NativeLibrary>();
  if (sha256Hex(chosen->bytes.data(), chosen->bytes.size()) != chosen->sha256)
    return absl::DataLossError(absl::StrCat("the bundle's ", chosen->isa,
                                            " code object fails its SHA-256 check: the bundle is corrupted, "
                                            "so its native code is not loaded; recompile it with ampc"));
  int fd = memfd_create("ampc-kernels", MFD_CLOEXEC);
  if (fd < 0) return absl::InternalError("memfd_create failed: cannot load the bundle's native kernels");
  size_t written = 0;
  while (written < chosen->bytes.size()) {
    ssize_t n = write(fd, chosen->bytes.data() + written, chosen->bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A memfd counts against RLIMIT_FSIZE like a file: `ulimit -f` below the code's size ends here.
      std::string why = n < 0 ? std::strerror(errno) : "wrote nothing";
      close(fd);
      return absl::ResourceExhaustedError(absl::StrCat("cannot write the bundle's ", chosen->bytes.size(),
                                                       " bytes of native kernels into memory: ", why));
    }
    written += static_cast<size_t>(n);
  }
  // The path names this process's own descriptor: no other process can swap what it refers to.
  std::string path = absl::StrCat("/proc/self/fd/", fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  close(fd);
  if (!handle) {
    const char* why = dlerror();
    return absl::InvalidArgumentError(absl::StrCat("cannot load the bundle's ", chosen->isa,
                                                   " native kernels: ", why ? why : "dlopen failed"));
  }
  return std::unique_ptr<NativeLibrary>(new NativeLibrary(handle, chosen->isa));
}

NativeLibrary::~NativeLibrary() {
  if (handle_) dlclose(handle_);
}

FusedKernel NativeLibrary::find(const std::string& symbol) const {
  return reinterpret_cast<FusedKernel>(dlsym(handle_, symbol.c_str()));
}

}  // namespace amp::rt::cpu
