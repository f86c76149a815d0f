// Internal to the cpu device: the zeroed memory of the arena its entries share (SharedArena.h:
// their buffers and every step's scratch). Arenas of 2 MiB and more are 2 MiB aligned and asked
// for transparent huge pages (madvise, which is what Linux's default THP mode honours), before the
// first touch so the kernel backs them with huge pages at fault time. A ResNet step walks ~100 MB
// of activations, blocked copies and oneDNN scratchpads through 4 KiB pages otherwise, far more
// than the TLB covers.
// Only the placement of the bytes changes, never a value. Free with std::free.
#ifndef AMP_RUNTIME_DEVICES_CPU_ARENAMEMORY_H
#define AMP_RUNTIME_DEVICES_CPU_ARENAMEMORY_H

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace amp::rt::cpu {

// `bytes` zeroed bytes aligned to at least `alignment` (a power of two dividing 2 MiB), or null.
inline uint8_t* allocateArena(size_t bytes, size_t alignment) {
  constexpr size_t kHuge = size_t{2} << 20;
  const bool huge = bytes >= kHuge;
  const size_t align = huge ? kHuge : alignment;
  const size_t size = (bytes + align - 1) / align * align;  // aligned_alloc wants a multiple
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(align, size));
  if (!p) return nullptr;
#if defined(MADV_HUGEPAGE)
  if (huge) (void)madvise(p, size, MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
#endif
  std::memset(p, 0, bytes);
  return p;
}

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_ARENAMEMORY_H
