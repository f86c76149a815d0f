#include "runtime/Tensor.h"

#include <cstdlib>
#include <cstring>

namespace amp::rt {

int64_t numElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void Tensor::FreeDeleter::operator()(uint8_t* p) const {
  if (owns) std::free(p);
}

static uint8_t* allocateZeroed(size_t nbytes) {
  size_t rounded = ((nbytes + 63) / 64) * 64;
  if (rounded == 0) rounded = 64;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
  if (p) std::memset(p, 0, rounded);
  return p;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  nbytes_ = static_cast<size_t>(numElements(shape_)) * dtypeSize(dtype_);
  bytes_.reset(allocateZeroed(nbytes_));
}

Tensor Tensor::borrow(DType dtype, Shape shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.nbytes_ = static_cast<size_t>(numElements(t.shape_)) * dtypeSize(dtype);
  t.bytes_ = std::unique_ptr<uint8_t[], FreeDeleter>(static_cast<uint8_t*>(data), FreeDeleter{false});
  return t;
}

Tensor::Tensor(const Tensor& other) : dtype_(other.dtype_), shape_(other.shape_), nbytes_(other.nbytes_) {
  if (other.bytes_) {
    bytes_.reset(allocateZeroed(nbytes_));
    std::memcpy(bytes_.get(), other.bytes_.get(), nbytes_);
  }
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) {
    Tensor copy(other);
    *this = std::move(copy);
  }
  return *this;
}

bool Tensor::reshapeInPlace(const Shape& shape) {
  if (numElements(shape) != numel()) return false;
  shape_ = shape;
  return true;
}

bool Tensor::bitwiseEquals(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (nbytes_ == 0) return true;
  return std::memcmp(bytes_.get(), other.bytes_.get(), nbytes_) == 0;
}

}  // namespace amp::rt
