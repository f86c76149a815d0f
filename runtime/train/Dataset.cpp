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

namespace {

// Converts gathered rows (`staged`, source dtype) into the model's buffer.
absl::StatusOr<Tensor> convertGathered(DType sourceType, const std::vector<uint8_t>& staged, DType dtype,
                                       const Shape& shape, const std::string& what) {
  Tensor out(dtype, shape);
  if (sourceType == dtype) {
    std::memcpy(out.data(), staged.data(), staged.size());
    return out;
  }
  bool srcInt = !isFloat(sourceType), dstInt = !isFloat(dtype);
  if (srcInt != dstInt)
    return absl::InvalidArgumentError(absl::StrCat(what, ": data is ", std::string(dtypeName(sourceType)),
                                                   " but the model expects ", std::string(dtypeName(dtype))));
  convertBuffer(sourceType, staged.data(), dtype, out.data(), out.numel());
  return out;
}

absl::Status checkFills(int64_t rowElems, size_t examples, DType dtype, const Shape& shape, const std::string& what) {
  if (rowElems * static_cast<int64_t>(examples) != numElements(shape))
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", examples, " examples of ", rowElems, " values do not fill the model's ",
        std::string(dtypeName(dtype)), " ", shapeToString(shape)));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> gatherBatch(const Tensor& source, const std::vector<int64_t>& indices,
                                   DType dtype, const Shape& shape, const std::string& what) {
  int64_t rows = source.shape()[0];
  int64_t rowElems = rows ? source.numel() / rows : 0;
  if (auto s = checkFills(rowElems, indices.size(), dtype, shape, what); !s.ok()) return s;
  size_t rowBytes = static_cast<size_t>(rowElems) * dtypeSize(source.dtype());
  std::vector<uint8_t> staged(rowBytes * indices.size());
  for (size_t k = 0; k < indices.size(); ++k)
    std::memcpy(staged.data() + k * rowBytes, source.data() + indices[k] * rowBytes, rowBytes);
  return convertGathered(source.dtype(), staged, dtype, shape, what);
}

absl::StatusOr<Tensor> gatherBatch(const NpyRowFile& source, const std::vector<int64_t>& indices,
                                   DType dtype, const Shape& shape, const std::string& what) {
  const int64_t rowElems = numElements(source.shape()) / source.rows();
  if (auto s = checkFills(rowElems, indices.size(), dtype, shape, what); !s.ok()) return s;
  const size_t rowBytes = source.rowBytes();
  std::vector<uint8_t> staged(rowBytes * indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    uint8_t* row = staged.data() + k * rowBytes;
    if (auto s = source.readRow(indices[k], row); !s.ok()) return s;
    if (isFloat(source.dtype()))
      for (int64_t e = 0; e < rowElems; ++e)
        if (!std::isfinite(loadAsF32(source.dtype(), row, e)))
          return absl::InvalidArgumentError(absl::StrCat(source.path(), ": example ", indices[k], " holds a non-finite value (",
                                                         loadAsF32(source.dtype(), row, e), ") at element ", e));
  }
  return convertGathered(source.dtype(), staged, dtype, shape, what);
}

absl::StatusOr<Dataset> openNpyFolderDataset(const std::string& dir, const std::string& inputName,
                                             const std::string& labelName) {
  Dataset d;
  d.name = dir + "/";
  auto input = NpyRowFile::open(dir + "/" + inputName + ".npy");
  if (!input.ok())
    return absl::Status(input.status().code(), absl::StrCat(input.status().message(), " (a data folder holds ",
                                                            inputName, ".npy and ", labelName,
                                                            ".npy, named like the model's input and label)"));
  auto label = NpyRowFile::open(dir + "/" + labelName + ".npy");
  if (!label.ok())
    return absl::Status(label.status().code(), absl::StrCat(label.status().message(), " (a data folder holds ",
                                                            inputName, ".npy and ", labelName,
                                                            ".npy, named like the model's input and label)"));
  if ((*input)->rows() != (*label)->rows())
    return absl::InvalidArgumentError(absl::StrCat(dir, ": ", inputName, ".npy has ", (*input)->rows(), " examples, ",
                                                   labelName, ".npy ", (*label)->rows()));
  d.inputFile = std::move(*input);
  d.labelFile = std::move(*label);
  return d;
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
