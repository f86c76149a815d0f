#include "runtime/devices/cpu/NativeCode.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/plan/CodeRecords.h"

namespace amp::rt::cpu {
namespace {

// The start of the loaded object containing `address` (null when none).
const void* objectBase(const void* address) {
  Dl_info info;
  return dladdr(address, &info) ? info.dli_fbase : nullptr;
}

bool validId(const char* s) {
  if (!s || !*s) return false;
  for (size_t i = 0; s[i]; ++i)
    if (i > 256 || !(std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) return false;
  return true;
}

bool validHash(const char* s) {
  if (!s || strnlen(s, 65) != 64) return false;
  for (size_t i = 0; i < 64; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NativeLibrary>> NativeLibrary::load(const Plan& plan, const CpuFeatures& features) {
  // Every record, not only the one this CPU would load: a bundle with a bad record is corrupted or
  // forged, whichever machine it later runs on.
  for (const CodeObject& c : plan.code)
    if (auto s = checkCodeRecord(c, static_cast<int64_t>(c.bytes.size()), "the bundle"); !s.ok()) return s;
  const CodeObject* chosen = nullptr;
  const std::string level = features.isaLevel();
  for (const char* isa : {"x86-64-v4", "x86-64-v3"}) {
    if (std::string(isa) == "x86-64-v4" && level != "x86-64-v4") continue;
    if (level == "x86-64") break;
    for (const CodeObject& c : plan.code)
      if (c.isa == isa && c.format == "so" && !chosen) chosen = &c;
  }
  if (!chosen) return std::unique_ptr<NativeLibrary>();
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
  if (!handle) {
    const char* why = dlerror();
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat("cannot load the bundle's ", chosen->isa,
                                                   " native kernels: ", why ? why : "dlopen failed"));
  }
  std::unique_ptr<NativeLibrary> lib(new NativeLibrary(handle, fd, chosen->isa));
  auto refuse = [&](const std::string& problem) {
    return absl::InvalidArgumentError(
        absl::StrCat("the bundle's ", chosen->isa, " code object: ", problem, "; recompile the bundle with ampc"));
  };
  // The one fixed name looked up; it must resolve inside the object itself, not in a library the
  // object depends on.
  const auto* table = static_cast<const AmpKernelTable*>(dlsym(handle, kKernelTableSymbol));
  struct link_map* map = nullptr;
  if (!table || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map ||
      objectBase(table) != objectBase(reinterpret_cast<const void*>(map->l_ld)))
    return refuse(absl::StrCat("exports no kernel table '", kKernelTableSymbol, "'"));
  const void* base = objectBase(table);
  if (table->version != kKernelTableVersion)
    return refuse(absl::StrCat("has a version ", table->version, " kernel table (this amp-run reads version ",
                               kKernelTableVersion, ")"));
  if (!table->isa || strnlen(table->isa, 32) >= 32 || chosen->isa != table->isa)
    return refuse("its kernel table names another ISA level");
  for (uint32_t i = 0; i < table->count; ++i) {
    const AmpKernelEntry& e = table->entries[i];
    if (!validId(e.id) || !validHash(e.bodySha256) || !e.fn || objectBase(reinterpret_cast<const void*>(e.fn)) != base)
      return refuse(absl::StrCat("kernel table entry ", i, " is malformed"));
    lib->kernels_.emplace(std::make_pair(std::string(e.id), std::string(e.bodySha256)), e.fn);
    ++lib->ids_[e.id];
  }
  return lib;
}

NativeLibrary::~NativeLibrary() {
  if (handle_) dlclose(handle_);
  if (memfd_ >= 0) close(memfd_);
}

absl::StatusOr<FusedKernel> NativeLibrary::bind(const std::string& id, const std::string& bodyHash) const {
  auto it = kernels_.find({id, bodyHash});
  if (it != kernels_.end()) return it->second;
  if (!ids_.count(id))
    return absl::InvalidArgumentError(
        absl::StrCat("the bundle's ", isa_, " code object has no kernel '", id, "' in its kernel table"));
  return absl::InvalidArgumentError(
      absl::StrCat("kernel '", id, "' of the bundle's ", isa_,
                   " code object was generated for another region than this step's (its body hash differs): the "
                   "plan was edited"));
}

}  // namespace amp::rt::cpu
