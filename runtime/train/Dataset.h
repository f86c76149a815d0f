// Training data: a pair of tensors whose first dimension indexes examples, seeded shuffling and
// batching. Batches are gathered rows reshaped to the model's input/label buffer shapes.
#ifndef AMP_RUNTIME_TRAIN_DATASET_H
#define AMP_RUNTIME_TRAIN_DATASET_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/Tensor.h"
#include "runtime/io/Npy.h"

namespace amp::rt {

// In memory (inputs, labels), or streamed: each array an .npy file read row by row as batches
// are gathered (inputFile, labelFile; the tensors are then empty), so that memory does not grow
// with the dataset.
struct Dataset {
  std::string name;  // for messages: "fashion-mnist train", "data.npz", "DIR/"
  Tensor inputs;     // [N, ...] (f32 or integer ids)
  Tensor labels;     // [N, ...] integer class ids (or floats for regression)
  std::shared_ptr<const NpyRowFile> inputFile, labelFile;
  int64_t size() const { return inputFile ? inputFile->rows() : inputs.rank() ? inputs.shape()[0] : 0; }
  bool streamed() const { return inputFile != nullptr; }
};

// Fashion-MNIST from Debian's dataset-fashion-mnist: images as f32 [N, 784] scaled to [0, 1],
// labels as i64 [N]. `split` is "train" or "test".
absl::StatusOr<Dataset> loadFashionMnistDataset(const std::string& dir, const std::string& split);

// An npz with one array named like the model's input and one named like its label, both with
// the example count as first dimension. Non-finite float inputs are rejected with their index.
// `memoryLimitBytes` bounds what the archive may decompress to (0: physical memory; Npz.h).
absl::StatusOr<Dataset> loadNpzDataset(const std::string& path, const std::string& inputName,
                                       const std::string& labelName, int64_t memoryLimitBytes = 0);

// A folder with one .npy file named like the model's input and one named like its label
// (DIR/image.npy, DIR/label.npy), both [N, ...] with the same N: streamed, never read whole. The
// headers are checked now; a non-finite float input is reported, with its example, when the
// batch that holds it is gathered.
absl::StatusOr<Dataset> openNpyFolderDataset(const std::string& dir, const std::string& inputName,
                                             const std::string& labelName);

// The example order of `epoch`: a Fisher-Yates permutation of [0, n) driven by Philox4x32-10
// keyed by (seed, epoch), so any (seed, epoch, position) can be resumed exactly.
std::vector<int64_t> epochOrder(int64_t n, uint64_t seed, int64_t epoch);

// Rank `rank`'s share of an epoch's order for a job of `world` ranks, with DistributedSampler's
// semantics (drop_last=False): the order is padded to a multiple of `world` by repeating its
// first examples, and rank r takes positions r, r + world, r + 2 world, ... Every rank gets
// ceil(n / world) examples; one rank gets the whole order.
std::vector<int64_t> rankShard(const std::vector<int64_t>& order, int rank, int world);

// Gathers examples `indices` of `source` ([N, ...]) into a tensor of `shape` and dtype `dtype`
// (the model's buffer); the element counts must agree (e.g. [B, 32] rows into [B*32]).
absl::StatusOr<Tensor> gatherBatch(const Tensor& source, const std::vector<int64_t>& indices,
                                   DType dtype, const Shape& shape, const std::string& what);
// The same from a streamed array; float rows are checked to be finite.
absl::StatusOr<Tensor> gatherBatch(const NpyRowFile& source, const std::vector<int64_t>& indices,
                                   DType dtype, const Shape& shape, const std::string& what);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_DATASET_H
