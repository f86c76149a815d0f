// A dense, row-major, owning tensor: the unit of data the runtime passes around.
#ifndef AMP_RUNTIME_TENSOR_H
#define AMP_RUNTIME_TENSOR_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/DType.h"

namespace amp::rt {

using Shape = std::vector<int64_t>;

int64_t numElements(const Shape& shape);
std::string shapeToString(const Shape& shape);  // "[2, 3]"

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor. Storage is 64-byte aligned.
  Tensor(DType dtype, Shape shape);
  // A tensor over `data`, not owned: the caller keeps it alive and unchanged while the tensor is
  // used (zero-copy feeds, e.g. the Python package's numpy arrays). Copies of it own their bytes.
  static Tensor borrow(DType dtype, Shape shape, void* data);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numElements(shape_); }
  size_t nbytes() const { return nbytes_; }

  uint8_t* data() { return bytes_.get(); }
  const uint8_t* data() const { return bytes_.get(); }
  template <class T> T* as() { return reinterpret_cast<T*>(bytes_.get()); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(bytes_.get()); }

  // Deep copy (Tensor itself copies share nothing either: copy construction is deep).
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  // Same bytes, new shape with the same element count.
  bool reshapeInPlace(const Shape& shape);
  // Byte-wise equality of dtype, shape and contents.
  bool bitwiseEquals(const Tensor& other) const;

 private:
  struct FreeDeleter {
    FreeDeleter() noexcept : owns(true) {}
    explicit FreeDeleter(bool ownsBytes) noexcept : owns(ownsBytes) {}
    void operator()(uint8_t* p) const;
    bool owns;
  };
  DType dtype_ = DType::F32;
  Shape shape_;
  size_t nbytes_ = 0;
  std::unique_ptr<uint8_t[], FreeDeleter> bytes_;
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TENSOR_H
