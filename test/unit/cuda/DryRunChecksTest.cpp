// What the dry run (runtime/devices/cuda/DryRunApi.h) refuses on its own, below the executor: a
// miswired pointer inside a struct passed by value (followed through the layouts the code object
// records, kernels/ParamLayouts.cu), what a GPU refuses while a stream captures, and cuBLASLt's
// workspace in its memory total.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/kernels/math/ConvMath.h"
#include "runtime/kernels/cuda/MultiTensorArgs.h"
#include "runtime/kernels/cuda/ReduceArgs.h"
#include "runtime/kernels/math/ShapeMath.h"
#include "runtime/kernels/cuda/TrainArgs.h"
#include "test/unit/cuda/TestBundles.h"

namespace amp::rt::cuda {
namespace {

const CodeObject* ptxOf(const Plan& plan) {
  for (const CodeObject& c : plan.code)
    if (c.format == "ptx") return &c;
  return nullptr;
}

// A dry run with the bundle's PTX loaded and its signatures and layouts read.
void loadCode(DryRunApi& api, const Plan& plan) {
  const CodeObject* ptx = ptxOf(plan);
  ASSERT_NE(ptx, nullptr);
  ASSERT_TRUE(api.loadModule(ptx->bytes, true).ok());
  api.kernelSignatures(ptx->bytes);
}

DevicePtr deviceBlock(DryRunApi& api, int64_t bytes) {
  auto p = api.allocate(bytes);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : 0;
}

absl::Status launchWith(DryRunApi& api, const std::string& kernel, std::vector<void*> values, std::vector<size_t> sizes) {
  auto fn = api.function(kernel);
  if (!fn.ok()) return fn.status();
  return api.launch(*fn, 1, 256, values.data(), 1, sizes);
}

void expectRefusal(const absl::Status& s, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(s.ok());
  for (const char* part : parts) EXPECT_NE(s.message().find(part), std::string::npos) << part << " in: " << s.message();
}

// The SGD pass takes its tensor list (grad, param, momentum, low-precision copy) by value; the
// optimizer-scalars kernel its AmpOptimizerArgs. A pointer into freed memory, page-locked host
// memory, or a block too small for its pointee is refused, naming the kernel, the parameter and
// the field; null pointers (absent operands, unused list slots) are not.
TEST(DryRunChecks, PointersInsideStructArgumentsMustAddressLiveDeviceMemory) {
  LOAD_OR_SKIP(plan, "mlp_sgd_clip_f16_sm_80");
  DryRunApi api;
  loadCode(api, *plan);
  EXPECT_EQ(api.structLayoutsKnown(), 9u) << "four tensor lists, the optimizer's arguments, four shapes";

  const DevicePtr grad = deviceBlock(api, 4096), param = deviceBlock(api, 4096), momentum = deviceBlock(api, 4096),
                  copy = deviceBlock(api, 4096), scalars = deviceBlock(api, sizeof(AmpStepScalars));
  AmpTensorList<4> list{};
  const DevicePtr wiring[4] = {grad, param, momentum, copy};
  for (int d = 0; d < 4; ++d) std::memcpy(&list.ptr[d][0], &wiring[d], 8);
  list.numel[0] = 1024;
  list.blocks = 1;
  DevicePtr scalarsArg = scalars;
  const std::vector<size_t> sgdSizes = {sizeof list, 8};
  EXPECT_TRUE(launchWith(api, "amp_mt_sgd_f16w_f16", {&list, &scalarsArg}, sgdSizes).ok());

  const DevicePtr freed = deviceBlock(api, 4096);
  api.release(freed);
  std::memcpy(&list.ptr[2][0], &freed, 8);
  expectRefusal(launchWith(api, "amp_mt_sgd_f16w_f16", {&list, &scalarsArg}, sgdSizes),
                {"kernel amp_mt_sgd_f16w_f16", "parameter 0 (AmpTensorList<4>)", "field ptr[2][0]",
                 "does not address 1 byte of a live device allocation"});
  auto pinned = api.allocatePinned(4096);
  ASSERT_TRUE(pinned.ok());
  const DevicePtr host = static_cast<DevicePtr>(reinterpret_cast<uintptr_t>(*pinned));
  std::memcpy(&list.ptr[2][0], &momentum, 8);
  std::memcpy(&list.ptr[3][1], &host, 8);  // a second tensor's low-precision copy in host memory
  expectRefusal(launchWith(api, "amp_mt_sgd_f16w_f16", {&list, &scalarsArg}, sgdSizes), {"field ptr[3][1]"});

  AmpOptimizerArgs args{};
  const DevicePtr step = deviceBlock(api, 8), lr = deviceBlock(api, 4), found = deviceBlock(api, 4);
  std::memcpy(&args.step, &step, 8);
  std::memcpy(&args.lr, &lr, 8);
  std::memcpy(&args.foundInf, &found, 8);
  std::memcpy(&args.out, &scalars, 8);  // scale and norm stay null: unscaled, unclipped
  const std::vector<size_t> argSizes = {sizeof args};
  EXPECT_TRUE(launchWith(api, "amp_optimizer_scalars", {&args}, argSizes).ok());
  const DevicePtr tooSmall = lr;  // 4 bytes where the step counter is 8
  std::memcpy(&args.step, &tooSmall, 8);
  expectRefusal(launchWith(api, "amp_optimizer_scalars", {&args}, argSizes),
                {"kernel amp_optimizer_scalars", "parameter 0 (AmpOptimizerArgs)", "field step:",
                 "does not address 8 bytes"});
  std::memcpy(&args.step, &step, 8);
  std::memcpy(&args.out, &host, 8);
  expectRefusal(launchWith(api, "amp_optimizer_scalars", {&args}, argSizes), {"field out:"});
}

// The records come from NVRTC's layout of the structs (kernels/ParamLayouts.cu); the executor
// fills the same structs as g++ lays them out. Every recorded size, offset and pointee must be the
// host's own, or the dry run would follow (and a GPU would read) pointers the host never wrote.
struct ExpectedField {
  const char* name;
  size_t offset;
  int64_t rows, columns, pointee;
};
void expectLayout(const DryRunApi& api, size_t bytes, const std::string& name, const std::vector<ExpectedField>& fields) {
  SCOPED_TRACE(name);
  const DryRunApi::StructLayout* layout = api.structLayoutOfSize(bytes);
  ASSERT_NE(layout, nullptr) << "no record of " << bytes << " bytes";
  EXPECT_EQ(layout->name, name);
  ASSERT_EQ(layout->fields.size(), fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    const DryRunApi::StructLayout::Field& f = layout->fields[i];
    EXPECT_EQ(f.name, fields[i].name);
    EXPECT_EQ(f.offset, static_cast<int64_t>(fields[i].offset)) << f.name;
    EXPECT_EQ(f.rows, fields[i].rows) << f.name;
    EXPECT_EQ(f.columns, fields[i].columns) << f.name;
    EXPECT_EQ(f.pointee, fields[i].pointee) << f.name;
  }
}

template <int Depth>
void expectTensorList(const DryRunApi& api) {
  expectLayout(api, sizeof(AmpTensorList<Depth>), "AmpTensorList<" + std::to_string(Depth) + ">",
               {{"ptr", offsetof(AmpTensorList<Depth>, ptr), Depth, amp_mt_capacity(Depth), 1}});
}

TEST(DryRunChecks, TheRecordedLayoutsAreTheHostsOwn) {
  LOAD_OR_SKIP(plan, "mlp_sgd_clip_f16_sm_80");
  DryRunApi api;
  loadCode(api, *plan);
  expectTensorList<1>(api);
  expectTensorList<2>(api);
  expectTensorList<4>(api);
  expectTensorList<5>(api);
  using A = AmpOptimizerArgs;
  expectLayout(api, sizeof(A), "AmpOptimizerArgs",
               {{"step", offsetof(A, step), 1, 1, sizeof(long long)},
                {"lr", offsetof(A, lr), 1, 1, sizeof(float)},
                {"foundInf", offsetof(A, foundInf), 1, 1, sizeof(float)},
                {"scale", offsetof(A, scale), 1, 1, sizeof(float)},
                {"norm", offsetof(A, norm), 1, 1, sizeof(float)},
                {"out", offsetof(A, out), 1, 1, sizeof(AmpStepScalars)}});
  expectLayout(api, sizeof(AmpReduceShape), "AmpReduceShape", {});
  expectLayout(api, sizeof(AmpTransposeShape), "AmpTransposeShape", {});
  expectLayout(api, sizeof(AmpConvShape), "AmpConvShape", {});
  expectLayout(api, sizeof(AmpPoolShape), "AmpPoolShape", {});
}

// A by-value parameter no recorded layout describes is refused, not passed unchecked; a code
// object that records no layouts at all (an older ampc's) leaves its structs unchecked.
TEST(DryRunChecks, AStructParameterWithoutARecordedLayoutIsRefused) {
  const std::string layout =
      "\n.global .align 8 .b8 amp_layout_Pair[56] = {16, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, "
      "0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4};\n"
      ".global .align 1 .b8 amp_layout_Pair_names[10] = {80, 97, 105, 114, 59, 100, 97, 116, 97};\n";
  const std::string kernels =
      ".visible .entry takes_pair(\n\t.param .align 8 .b8 takes_pair_param_0[16]\n)\n{\n\tret;\n}\n"
      ".visible .entry takes_triple(\n\t.param .align 8 .b8 takes_triple_param_0[24]\n)\n{\n\tret;\n}\n";
  for (bool recorded : {true, false}) {
    SCOPED_TRACE(recorded ? "with layouts" : "without layouts");
    const std::string text = ".version 8.0\n.target sm_90\n" + (recorded ? layout : std::string()) + kernels;
    const std::vector<uint8_t> ptx(text.begin(), text.end());
    DryRunApi api;
    ASSERT_TRUE(api.loadModule(ptx, true).ok());
    api.kernelSignatures(ptx);
    EXPECT_EQ(api.structLayoutsKnown(), recorded ? 1u : 0u);
    const DevicePtr data = deviceBlock(api, 4);
    uint64_t pair[2] = {7, data}, triple[3] = {0, 0, 0};
    EXPECT_TRUE(launchWith(api, "takes_pair", {pair}, {16}).ok());
    const absl::Status undescribed = launchWith(api, "takes_triple", {triple}, {24});
    if (!recorded) {
      EXPECT_TRUE(undescribed.ok()) << undescribed;
      continue;
    }
    expectRefusal(undescribed, {"kernel takes_triple: parameter 0 is a struct of 24 bytes that no layout"});
    pair[1] = data + 2;  // 2 bytes left where the field points to 4
    expectRefusal(launchWith(api, "takes_pair", {pair}, {16}), {"parameter 0 (Pair), field data:", "4 bytes"});
  }
}

// While a stream captures, the GPU refuses allocations, frees and copies to or from pageable host
// memory (they cannot become graph nodes); page-locked copies are captured.
TEST(DryRunChecks, CaptureRefusesAllocationsFreesAndPageableCopies) {
  DryRunApi api;
  const DevicePtr device = deviceBlock(api, 256);
  auto pinned = api.allocatePinned(256);
  ASSERT_TRUE(pinned.ok());
  std::vector<uint8_t> pageable(256);
  ASSERT_TRUE(api.beginCapture().ok());
  expectRefusal(api.allocate(64).status(), {"allocate (cuMemAlloc) while the stream is captured"});
  expectRefusal(api.allocatePinned(64).status(), {"allocatePinned (cuMemHostAlloc) while the stream is captured"});
  expectRefusal(api.copyToDevice(device, pageable.data(), 256), {"copy to device from pageable host memory"});
  expectRefusal(api.copyToHost(pageable.data(), device, 256), {"copy to pageable host memory"});
  EXPECT_TRUE(api.copyToDevice(device, *pinned, 256).ok());
  EXPECT_TRUE(api.copyToHost(*pinned, device, 256).ok());
  EXPECT_TRUE(api.endCapture().ok());
  // A free has no status of its own: the capture it breaks fails.
  ASSERT_TRUE(api.beginCapture().ok());
  api.release(device);
  expectRefusal(api.endCapture().status(), {"release (cuMemFree) while the stream is captured"});
  ASSERT_TRUE(api.beginCapture().ok());
  api.releasePinned(*pinned);
  expectRefusal(api.endCapture().status(), {"releasePinned (cuMemFreeHost)"});
  // Outside capture all of it is allowed.
  EXPECT_TRUE(api.copyToDevice(device, pageable.data(), 256).ok()) << "the refused free left the block alive";
  EXPECT_TRUE(api.allocate(64).ok());
}

// The driver allocates cuBLASLt's workspace when the device opens; the dry run counts it with the
// code object: 32 MiB on Hopper, 4 MiB on Ampere, and a GPU without room for it says so.
TEST(DryRunChecks, TheMemoryTotalIncludesCublasLtsWorkspace) {
  const std::string text = ".version 8.0\n.target sm_80\n";
  const std::vector<uint8_t> ptx(text.begin(), text.end());
  DryRunApi hopper;
  EXPECT_EQ(hopper.deviceBytesInUse(), 0);
  ASSERT_TRUE(hopper.loadModule(ptx, true).ok());
  EXPECT_EQ(hopper.deviceBytesInUse(), int64_t{32} << 20);
  deviceBlock(hopper, 1000);
  EXPECT_EQ(hopper.deviceBytesInUse(), (int64_t{32} << 20) + 1000);
  GpuInfo ampere = DryRunApi::h200();
  ampere.ccMajor = 8;
  DryRunApi a100(ampere);
  ASSERT_TRUE(a100.loadModule(ptx, true).ok());
  EXPECT_EQ(a100.deviceBytesInUse(), int64_t{4} << 20);
  GpuInfo tiny = DryRunApi::h200();
  tiny.memoryBytes = int64_t{16} << 20;
  DryRunApi small(tiny);
  expectRefusal(small.loadModule(ptx, true), {"cuBLASLt's workspace: the GPU is out of memory: 32.0 MiB more do not fit"});
}

}  // namespace
}  // namespace amp::rt::cuda
