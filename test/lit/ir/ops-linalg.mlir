// RUN: amp-opt %s --split-input-file | amp-opt --split-input-file | FileCheck %s
// RUN: amp-opt %s --split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// Attributes written in the attr-dict (conv2d stride/padding/..., pool padding) must reach type
// inference when the custom form is parsed: the function result types below pin the shapes.

// CHECK-LABEL: func.func @matmul_2d
// CHECK-SAME: (%[[X:.*]]: tensor<32x784xf32>, %[[W:.*]]: tensor<784x256xf32>)
func.func @matmul_2d(%x: tensor<32x784xf32>, %w: tensor<784x256xf32>) -> tensor<32x256xf32> {
  // CHECK: %[[Y:.*]] = amp.matmul %[[X]], %[[W]] : tensor<32x784xf32>, tensor<784x256xf32>
  %y = amp.matmul %x, %w : tensor<32x784xf32>, tensor<784x256xf32>
  // CHECK: return %[[Y]] : tensor<32x256xf32>
  return %y : tensor<32x256xf32>
}
// GENERIC-LABEL: sym_name = "matmul_2d"
// GENERIC: "amp.matmul"(%{{.*}}, %{{.*}}) : (tensor<32x784xf32>, tensor<784x256xf32>) -> tensor<32x256xf32>

// -----

// CHECK-LABEL: func.func @matmul_batched
func.func @matmul_batched(%a: tensor<4x16x8xbf16>, %b: tensor<4x8x32xbf16>) -> tensor<4x16x32xbf16> {
  // CHECK: %[[Y:.*]] = amp.matmul %{{.*}}, %{{.*}} : tensor<4x16x8xbf16>, tensor<4x8x32xbf16>
  %y = amp.matmul %a, %b : tensor<4x16x8xbf16>, tensor<4x8x32xbf16>
  // CHECK: return %[[Y]] : tensor<4x16x32xbf16>
  return %y : tensor<4x16x32xbf16>
}

// -----

// Batch dimensions broadcast numpy-style; a 2-D operand broadcasts against any batch.
// CHECK-LABEL: func.func @matmul_broadcast_batch
func.func @matmul_broadcast_batch(%a: tensor<2x1x16x8xf32>, %b: tensor<3x8x32xf32>, %m: tensor<16x8xf32>)
    -> (tensor<2x3x16x32xf32>, tensor<3x16x32xf32>) {
  // CHECK: %[[Y0:.*]] = amp.matmul %{{.*}}, %{{.*}} : tensor<2x1x16x8xf32>, tensor<3x8x32xf32>
  %0 = amp.matmul %a, %b : tensor<2x1x16x8xf32>, tensor<3x8x32xf32>
  // CHECK: %[[Y1:.*]] = amp.matmul %{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<3x8x32xf32>
  %1 = amp.matmul %m, %b : tensor<16x8xf32>, tensor<3x8x32xf32>
  // CHECK: return %[[Y0]], %[[Y1]] : tensor<2x3x16x32xf32>, tensor<3x16x32xf32>
  return %0, %1 : tensor<2x3x16x32xf32>, tensor<3x16x32xf32>
}
// GENERIC-LABEL: sym_name = "matmul_broadcast_batch"
// GENERIC: "amp.matmul"(%{{.*}}, %{{.*}}) : (tensor<2x1x16x8xf32>, tensor<3x8x32xf32>) -> tensor<2x3x16x32xf32>
// GENERIC: "amp.matmul"(%{{.*}}, %{{.*}}) : (tensor<16x8xf32>, tensor<3x8x32xf32>) -> tensor<3x16x32xf32>

// -----

// CHECK-LABEL: func.func @matmul_transpose
func.func @matmul_transpose(%a: tensor<8x16xf32>, %b: tensor<8x4xf32>, %q: tensor<4x64x16xf16>,
                            %k: tensor<4x64x16xf16>, %c: tensor<4x8xf32>)
    -> (tensor<16x4xf32>, tensor<4x64x64xf16>, tensor<16x4xf32>, tensor<4x64x64xf16>) {
  // CHECK: %[[TA:.*]] = amp.matmul %{{.*}}, %{{.*}} transpose_a : tensor<8x16xf32>, tensor<8x4xf32>
  %0 = amp.matmul %a, %b transpose_a : tensor<8x16xf32>, tensor<8x4xf32>
  // CHECK: %[[TB:.*]] = amp.matmul %{{.*}}, %{{.*}} transpose_b : tensor<4x64x16xf16>, tensor<4x64x16xf16>
  %1 = amp.matmul %q, %k transpose_b : tensor<4x64x16xf16>, tensor<4x64x16xf16>
  // CHECK: %[[TAB:.*]] = amp.matmul %{{.*}}, %{{.*}} transpose_a transpose_b : tensor<8x16xf32>, tensor<4x8xf32>
  %2 = amp.matmul %a, %c transpose_a transpose_b : tensor<8x16xf32>, tensor<4x8xf32>
  // The unit attribute may also be spelled in the attr-dict; it is printed as the keyword.
  // CHECK: %[[TB2:.*]] = amp.matmul %{{.*}}, %{{.*}} transpose_b : tensor<4x64x16xf16>, tensor<4x64x16xf16>
  %3 = amp.matmul %q, %k {transpose_b} : tensor<4x64x16xf16>, tensor<4x64x16xf16>
  // CHECK: return %[[TA]], %[[TB]], %[[TAB]], %[[TB2]] : tensor<16x4xf32>, tensor<4x64x64xf16>, tensor<16x4xf32>, tensor<4x64x64xf16>
  return %0, %1, %2, %3 : tensor<16x4xf32>, tensor<4x64x64xf16>, tensor<16x4xf32>, tensor<4x64x64xf16>
}
// GENERIC-LABEL: sym_name = "matmul_transpose"
// GENERIC: "amp.matmul"(%{{.*}}, %{{.*}}) <{transpose_a}> : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
// GENERIC: "amp.matmul"(%{{.*}}, %{{.*}}) <{transpose_b}> : (tensor<4x64x16xf16>, tensor<4x64x16xf16>) -> tensor<4x64x64xf16>
// GENERIC: "amp.matmul"(%{{.*}}, %{{.*}}) <{transpose_a, transpose_b}> : (tensor<8x16xf32>, tensor<4x8xf32>) -> tensor<16x4xf32>

// -----

// CHECK-LABEL: func.func @linear_pytorch_layout
// CHECK-SAME: (%[[X:.*]]: tensor<128x784xbf16>, %[[W:.*]]: tensor<256x784xbf16>, %[[B:.*]]: tensor<256xbf16>)
func.func @linear_pytorch_layout(%x: tensor<128x784xbf16>, %w: tensor<256x784xbf16>, %b: tensor<256xbf16>)
    -> (tensor<128x256xbf16>, tensor<128x256xbf16>) {
  // The default transpose_w = true (weight [out, in], like nn.Linear) is not printed.
  // CHECK: %[[Y0:.*]] = amp.linear %[[X]], %[[W]], %[[B]] : tensor<128x784xbf16>, tensor<256x784xbf16>, tensor<256xbf16>
  %0 = amp.linear %x, %w, %b : tensor<128x784xbf16>, tensor<256x784xbf16>, tensor<256xbf16>
  // Spelling the default explicitly gives the same op.
  // CHECK: %[[Y1:.*]] = amp.linear %[[X]], %[[W]] : tensor<128x784xbf16>, tensor<256x784xbf16>
  %1 = amp.linear %x, %w transpose_w = true : tensor<128x784xbf16>, tensor<256x784xbf16>
  // CHECK: return %[[Y0]], %[[Y1]] : tensor<128x256xbf16>, tensor<128x256xbf16>
  return %0, %1 : tensor<128x256xbf16>, tensor<128x256xbf16>
}
// GENERIC-LABEL: sym_name = "linear_pytorch_layout"
// GENERIC: "amp.linear"(%{{.*}}, %{{.*}}, %{{.*}}) <{activation = #amp<linear_activation none>, transpose_w = true}> : (tensor<128x784xbf16>, tensor<256x784xbf16>, tensor<256xbf16>) -> tensor<128x256xbf16>
// GENERIC: "amp.linear"(%{{.*}}, %{{.*}}) <{activation = #amp<linear_activation none>, transpose_w = true}> : (tensor<128x784xbf16>, tensor<256x784xbf16>) -> tensor<128x256xbf16>

// -----

// transpose_w = false: the weight is [in, out] (x @ W); a batched input keeps its leading dims.
// CHECK-LABEL: func.func @linear_in_out_layout
func.func @linear_in_out_layout(%x: tensor<8x32x64xf32>, %w: tensor<64x256xf32>, %b: tensor<256xf32>,
                                %h: tensor<2x3x4x16xf16>, %w2: tensor<16x5xf16>)
    -> (tensor<8x32x256xf32>, tensor<2x3x4x5xf16>, tensor<8x32x256xf32>) {
  // CHECK: %[[Y0:.*]] = amp.linear %{{.*}}, %{{.*}}, %{{.*}} transpose_w = false : tensor<8x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
  %0 = amp.linear %x, %w, %b transpose_w = false : tensor<8x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
  // CHECK: %[[Y1:.*]] = amp.linear %{{.*}}, %{{.*}} transpose_w = false : tensor<2x3x4x16xf16>, tensor<16x5xf16>
  %1 = amp.linear %h, %w2 transpose_w = false : tensor<2x3x4x16xf16>, tensor<16x5xf16>
  // The attribute may also be written in the attr-dict; it is printed as the keyword.
  // CHECK: %[[Y2:.*]] = amp.linear %{{.*}}, %{{.*}}, %{{.*}} transpose_w = false : tensor<8x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
  %2 = amp.linear %x, %w, %b {transpose_w = false} : tensor<8x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
  // CHECK: return %[[Y0]], %[[Y1]], %[[Y2]] : tensor<8x32x256xf32>, tensor<2x3x4x5xf16>, tensor<8x32x256xf32>
  return %0, %1, %2 : tensor<8x32x256xf32>, tensor<2x3x4x5xf16>, tensor<8x32x256xf32>
}
// GENERIC-LABEL: sym_name = "linear_in_out_layout"
// GENERIC: "amp.linear"(%{{.*}}, %{{.*}}, %{{.*}}) <{activation = #amp<linear_activation none>, transpose_w = false}> : (tensor<8x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<8x32x256xf32>
// GENERIC: "amp.linear"(%{{.*}}, %{{.*}}) <{activation = #amp<linear_activation none>, transpose_w = false}> : (tensor<2x3x4x16xf16>, tensor<16x5xf16>) -> tensor<2x3x4x5xf16>

// -----

// CHECK-LABEL: func.func @conv2d_basic
// CHECK-SAME: (%[[X:.*]]: tensor<8x3x32x32xf32>, %[[W:.*]]: tensor<16x3x3x3xf32>, %[[B:.*]]: tensor<16xf32>)
func.func @conv2d_basic(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>)
    -> (tensor<8x16x30x30xf32>, tensor<8x16x32x32xf32>) {
  // No bias, defaults: stride 1, no padding.
  // CHECK: %[[Y0:.*]] = amp.conv2d %[[X]], %[[W]] : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>
  %0 = amp.conv2d %x, %w : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>
  // CHECK: %[[Y1:.*]] = amp.conv2d %[[X]], %[[W]], %[[B]] {padding = array<i64: 1, 1>} : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>
  %1 = amp.conv2d %x, %w, %b {padding = array<i64: 1, 1>} : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>
  // CHECK: return %[[Y0]], %[[Y1]] : tensor<8x16x30x30xf32>, tensor<8x16x32x32xf32>
  return %0, %1 : tensor<8x16x30x30xf32>, tensor<8x16x32x32xf32>
}
// GENERIC-LABEL: sym_name = "conv2d_basic"
// GENERIC: "amp.conv2d"(%{{.*}}, %{{.*}}) <{dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>}> : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x30x30xf32>
// GENERIC: "amp.conv2d"(%{{.*}}, %{{.*}}, %{{.*}}) <{{.*}}padding = array<i64: 1, 1>{{.*}}> : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x32x32xf32>

// -----

// CHECK-LABEL: func.func @conv2d_stride_dilation
func.func @conv2d_stride_dilation(%x: tensor<8x3x32x32xbf16>, %w: tensor<16x3x3x3xbf16>)
    -> (tensor<8x16x16x16xbf16>, tensor<8x16x28x28xbf16>) {
  // (32 + 2 - 3) / 2 + 1 = 16
  // CHECK: %[[S:.*]] = amp.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 1>, stride = array<i64: 2, 2>}
  %0 = amp.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<8x3x32x32xbf16>, tensor<16x3x3x3xbf16>
  // 32 - 2*(3-1) - 1 + 1 = 28
  // CHECK: %[[D:.*]] = amp.conv2d %{{.*}}, %{{.*}} {dilation = array<i64: 2, 2>}
  %1 = amp.conv2d %x, %w {dilation = array<i64: 2, 2>} : tensor<8x3x32x32xbf16>, tensor<16x3x3x3xbf16>
  // CHECK: return %[[S]], %[[D]] : tensor<8x16x16x16xbf16>, tensor<8x16x28x28xbf16>
  return %0, %1 : tensor<8x16x16x16xbf16>, tensor<8x16x28x28xbf16>
}

// -----

// CHECK-LABEL: func.func @conv2d_groups
func.func @conv2d_groups(%x: tensor<2x8x10x10xf32>, %w: tensor<4x2x3x3xf32>, %dw: tensor<8x1x3x3xf32>,
                         %y: tensor<1x4x9x9xf32>, %w2: tensor<6x2x3x5xf32>, %b2: tensor<6xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<2x8x8x8xf32>, tensor<1x6x4x7xf32>) {
  // CHECK: %[[G:.*]] = amp.conv2d %{{.*}}, %{{.*}} {groups = 4 : i64} : tensor<2x8x10x10xf32>, tensor<4x2x3x3xf32>
  %0 = amp.conv2d %x, %w {groups = 4 : i64} : tensor<2x8x10x10xf32>, tensor<4x2x3x3xf32>
  // Depthwise.
  // CHECK: %[[DW:.*]] = amp.conv2d %{{.*}}, %{{.*}} {groups = 8 : i64} : tensor<2x8x10x10xf32>, tensor<8x1x3x3xf32>
  %1 = amp.conv2d %x, %dw {groups = 8 : i64} : tensor<2x8x10x10xf32>, tensor<8x1x3x3xf32>
  // Per-dimension stride and padding, a non-square kernel, bias and groups together:
  // H: (9 - 3) / 2 + 1 = 4, W: (9 + 2 - 5) / 1 + 1 = 7.
  // CHECK: %[[ALL:.*]] = amp.conv2d %{{.*}}, %{{.*}}, %{{.*}} {groups = 2 : i64, padding = array<i64: 0, 1>, stride = array<i64: 2, 1>}
  %2 = amp.conv2d %y, %w2, %b2 {stride = array<i64: 2, 1>, padding = array<i64: 0, 1>, groups = 2 : i64}
      : tensor<1x4x9x9xf32>, tensor<6x2x3x5xf32>, tensor<6xf32>
  // CHECK: return %[[G]], %[[DW]], %[[ALL]] : tensor<2x4x8x8xf32>, tensor<2x8x8x8xf32>, tensor<1x6x4x7xf32>
  return %0, %1, %2 : tensor<2x4x8x8xf32>, tensor<2x8x8x8xf32>, tensor<1x6x4x7xf32>
}
// GENERIC-LABEL: sym_name = "conv2d_groups"
// GENERIC: "amp.conv2d"{{.*}} -> tensor<2x4x8x8xf32>
// GENERIC: "amp.conv2d"{{.*}} -> tensor<2x8x8x8xf32>
// GENERIC: "amp.conv2d"{{.*}} -> tensor<1x6x4x7xf32>

// -----

// CHECK-LABEL: func.func @max_pool2d
func.func @max_pool2d(%x: tensor<8x16x32x32xf32>) -> (tensor<8x16x16x16xf32>, tensor<8x16x32x32xf32>, tensor<8x16x15x15xf32>) {
  // stride defaults to the kernel.
  // CHECK: %[[P0:.*]] = amp.max_pool2d %{{.*}} kernel = [2, 2] : tensor<8x16x32x32xf32>
  %0 = amp.max_pool2d %x kernel = [2, 2] : tensor<8x16x32x32xf32>
  // CHECK: %[[P1:.*]] = amp.max_pool2d %{{.*}} kernel = [3, 3] stride = [1, 1] {padding = array<i64: 1, 1>} : tensor<8x16x32x32xf32>
  %1 = amp.max_pool2d %x kernel = [3, 3] stride = [1, 1] {padding = array<i64: 1, 1>} : tensor<8x16x32x32xf32>
  // CHECK: %[[P2:.*]] = amp.max_pool2d %{{.*}} kernel = [3, 3] stride = [2, 2] : tensor<8x16x32x32xf32>
  %2 = amp.max_pool2d %x kernel = [3, 3] stride = [2, 2] : tensor<8x16x32x32xf32>
  // CHECK: return %[[P0]], %[[P1]], %[[P2]] : tensor<8x16x16x16xf32>, tensor<8x16x32x32xf32>, tensor<8x16x15x15xf32>
  return %0, %1, %2 : tensor<8x16x16x16xf32>, tensor<8x16x32x32xf32>, tensor<8x16x15x15xf32>
}
// GENERIC-LABEL: sym_name = "max_pool2d"
// GENERIC: "amp.max_pool2d"(%{{.*}}) <{kernel = array<i64: 2, 2>, padding = array<i64: 0, 0>}> : (tensor<8x16x32x32xf32>) -> tensor<8x16x16x16xf32>
// GENERIC: "amp.max_pool2d"(%{{.*}}) <{kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>}> : (tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>

// -----

// CHECK-LABEL: func.func @avg_pool2d
func.func @avg_pool2d(%x: tensor<8x16x32x32xf16>, %y: tensor<1x4x7x9xf32>) -> (tensor<8x16x15x15xf16>, tensor<1x4x4x5xf32>) {
  // CHECK: %[[A0:.*]] = amp.avg_pool2d %{{.*}} kernel = [3, 3] stride = [2, 2] : tensor<8x16x32x32xf16>
  %0 = amp.avg_pool2d %x kernel = [3, 3] stride = [2, 2] : tensor<8x16x32x32xf16>
  // H: (7 + 2 - 2) / 2 + 1 = 4, W: (9 + 4 - 4) / 2 + 1 = 5.
  // CHECK: %[[A1:.*]] = amp.avg_pool2d %{{.*}} kernel = [2, 4] stride = [2, 2] {padding = array<i64: 1, 2>} : tensor<1x4x7x9xf32>
  %1 = amp.avg_pool2d %y kernel = [2, 4] stride = [2, 2] {padding = array<i64: 1, 2>} : tensor<1x4x7x9xf32>
  // CHECK: return %[[A0]], %[[A1]] : tensor<8x16x15x15xf16>, tensor<1x4x4x5xf32>
  return %0, %1 : tensor<8x16x15x15xf16>, tensor<1x4x4x5xf32>
}
// GENERIC-LABEL: sym_name = "avg_pool2d"
// GENERIC: "amp.avg_pool2d"{{.*}} -> tensor<8x16x15x15xf16>
// GENERIC: "amp.avg_pool2d"{{.*}} -> tensor<1x4x4x5xf32>

// -----

// activation = relu: the layer with its relu epilogue (what amp-fuse folds); printed as a keyword.
// CHECK-LABEL: func.func @linear_relu
func.func @linear_relu(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  // CHECK: amp.linear %{{.*}}, %{{.*}}, %{{.*}} transpose_w = false activation = relu : tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>
  %0 = amp.linear %x, %w, %b transpose_w = false activation = relu : tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>
  return %0 : tensor<4x16xbf16>
}
// GENERIC-LABEL: sym_name = "linear_relu"
// GENERIC: "amp.linear"(%{{.*}}, %{{.*}}, %{{.*}}) <{activation = #amp<linear_activation relu>, transpose_w = false}>
