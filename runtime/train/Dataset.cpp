#include "runtime/train/Dataset.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/io/Idx.h"
#include "runtime/io/Npz.h"
#include "runtime/numerics/Convert.h"
#include "runtime/numerics/Philox.h"

namespace amp::rt {

absl::StatusOr<Dataset> loadFashionMnistDataset(const std::string& dir, const std::string& split) {
  auto raw = loadFashionMnist(dir, split);
  if (!raw.ok()) return raw.status();
  int64_t n = raw->images.shape()[0];
  Dataset d;
  d.name = "fashion-mnist " + split;
  d.inputs = Tensor(DType::F32, {n, 784});
  const uint8_t* px = raw->images.as<uint8_t>();
  float* out = d.inputs.as<float>();
  for (int64_t i = 0; i < n * 784; ++i) out[i] = px[i] / 255.0f;
  d.labels = Tensor(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i) d.labels.as<int64_t>()[i] = raw->labels.as<uint8_t>()[i];
  return d;
}

absl::StatusOr<Dataset> loadNpzDataset(const std::string& path, const std::string& inputName,
                                       const std::string& labelName, int64_t memoryLimitBytes) {
  NpzReadOptions options;
  options.maxTotalBytes = memoryLimitBytes > 0 ? uint64_t(memoryLimitBytes) : 0;
  auto members = readNpz(path, options);
  if (!members.ok()) return members.status();
  Dataset d;
  d.name = path;
  bool haveInput = false, haveLabel = false;
  for (NamedTensor& m : *members) {
    if (m.name == inputName) d.inputs = std::move(m.tensor), haveInput = true;
    else if (m.name == labelName) d.labels = std::move(m.tensor), haveLabel = true;
  }
  if (!haveInput || !haveLabel)
    return absl::InvalidArgumentError(absl::StrCat(path, ": needs arrays '", inputName, "' and '",
                                                   labelName, "' (the model's input and label names)"));
  if (d.inputs.rank() == 0 || d.labels.rank() == 0 || d.inputs.shape()[0] != d.labels.shape()[0])
    return absl::InvalidArgumentError(absl::StrCat(path, ": '", inputName, "' ", shapeToString(d.inputs.shape()),
                                                   " and '", labelName, "' ", shapeToString(d.labels.shape()),
                                                   " must share their first (example) dimension"));
  for (const Tensor* t : {&d.inputs, &d.labels}) {
    if (!isFloat(t->dtype())) continue;
    for (int64_t i = 0; i < t->numel(); ++i)
      if (!std::isfinite(loadAsF32(t->dtype(), t->data(), i)))
        return absl::InvalidArgumentError(absl::StrCat(path, ": '", t == &d.inputs ? inputName : labelName,
                                                       "' holds a non-finite value at flat index ", i));
  }
  return d;
}

std::vector<int64_t> epochOrder(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  for (int64_t i = n - 1; i > 0; --i) {
    uint64_t e = static_cast<uint64_t>(epoch);
    uint32_t counter[4] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32),
                           static_cast<uint32_t>(e), 0x5eed0000u | static_cast<uint32_t>((e >> 32) & 0xffff)};
    auto bits = philox4x32_10(key, counter);
    uint64_t r = (static_cast<uint64_t>(bits[0]) << 32) | bits[1];
    int64_t j = static_cast<int64_t>(r % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

absl::StatusOr<Tensor> gatherBatch(const Tensor& source, const std::vector<int64_t>& indices,
                                   DType dtype, const Shape& shape, const std::string& what) {
  int64_t rows = source.shape()[0];
  int64_t rowElems = rows ? source.numel() / rows : 0;
  if (rowElems * static_cast<int64_t>(indices.size()) != numElements(shape))
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", indices.size(), " examples of ", rowElems, " values do not fill the model's ",
        std::string(dtypeName(dtype)), " ", shapeToString(shape)));
  Tensor out(dtype, shape);
  size_t rowBytes = static_cast<size_t>(rowElems) * dtypeSize(source.dtype());
  std::vector<uint8_t> staged(rowBytes * indices.size());
  for (size_t k = 0; k < indices.size(); ++k)
    std::memcpy(staged.data() + k * rowBytes, source.data() + indices[k] * rowBytes, rowBytes);
  if (source.dtype() == dtype) {
    std::memcpy(out.data(), staged.data(), staged.size());
  } else {
    bool srcInt = !isFloat(source.dtype()), dstInt = !isFloat(dtype);
    if (srcInt != dstInt)
      return absl::InvalidArgumentError(absl::StrCat(what, ": data is ", std::string(dtypeName(source.dtype())),
                                                     " but the model expects ", std::string(dtypeName(dtype))));
    convertBuffer(source.dtype(), staged.data(), dtype, out.data(), out.numel());
  }
  return out;
}

std::vector<int64_t> rankShard(const std::vector<int64_t>& order, int rank, int world) {
  if (world <= 1 || order.empty()) return order;
  const size_t n = order.size(), perRank = (n + static_cast<size_t>(world) - 1) / static_cast<size_t>(world);
  std::vector<int64_t> shard;
  shard.reserve(perRank);
  for (size_t i = 0; i < perRank; ++i) shard.push_back(order[(static_cast<size_t>(rank) + i * world) % n]);
  return shard;
}

}  // namespace amp::rt
