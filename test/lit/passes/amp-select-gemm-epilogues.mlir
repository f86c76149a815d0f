// RUN: amp-opt %s --split-input-file --amp-fuse --amp-select-gemm-epilogues --verify-diagnostics | FileCheck %s

// amp-select-gemm-epilogues, after amp-fuse as in ampc's pipeline (--gemm-epilogues=cublaslt):
// the relu layer's GEMM also writes the mask, and the dX GEMM of the layer above applies it and
// sums the bias gradient; amp-fuse's relu-backward region and the +0 constant are gone.
// CHECK-LABEL: func.func @relu_layer
// CHECK-NEXT: %[[F:.*]]:2 = amp.gemm_epilogue relu_aux_bias %arg0, %arg1, %arg2 : tensor<32x64xbf16>, tensor<64x128xbf16>, tensor<128xbf16> -> tensor<32x128xbf16>, tensor<32x128xi1>
// CHECK-NEXT: %[[B:.*]]:2 = amp.gemm_epilogue drelu_bgrad %arg4, %arg3, %[[F]]#1 : tensor<32x16xbf16>, tensor<16x128xbf16>, tensor<32x128xi1> -> tensor<32x128xbf16>, tensor<128xbf16>
// CHECK-NEXT: return %[[F]]#0, %[[B]]#0, %[[B]]#1
module attributes {amp.target = "cuda:sm_90"} {
func.func @relu_layer(%x: tensor<32x64xbf16>, %w1: tensor<64x128xbf16>, %b1: tensor<128xbf16>, %w2: tensor<16x128xbf16>, %dy: tensor<32x16xbf16>) -> (tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<128xbf16>) {
  %h = amp.linear %x, %w1, %b1 transpose_w = false activation = relu : tensor<32x64xbf16>, tensor<64x128xbf16>, tensor<128xbf16>
  %dh = amp.matmul %dy, %w2 : tensor<32x16xbf16>, tensor<16x128xbf16>
  %zero = amp.constant dense<0.0> : tensor<bf16>
  %m = amp.compare gt, %h, %zero : tensor<32x128xbf16>, tensor<bf16>
  %dz = amp.select %m, %dh, %zero : tensor<32x128xi1>, tensor<32x128xbf16>, tensor<bf16>
  %db = amp.reduce_sum %dz dims = [0] : tensor<32x128xbf16>
  return %h, %dz, %db : tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<128xbf16>
}
}

// -----

// No bias and no bias gradient: RELU_AUX and DRELU.
// CHECK-LABEL: func.func @relu_no_bias
// CHECK-NEXT: %[[F:.*]]:2 = amp.gemm_epilogue relu_aux %arg0, %arg1 transpose_b :
// CHECK-NEXT: %[[B:.*]] = amp.gemm_epilogue drelu %arg3, %arg2, %[[F]]#1 :
// CHECK-SAME: -> tensor<32x128xf32>{{$}}
module attributes {amp.target = "cuda:sm_80"} {
func.func @relu_no_bias(%x: tensor<32x64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<16x128xf32>, %dy: tensor<32x16xf32>) -> (tensor<32x128xf32>, tensor<32x128xf32>) {
  %h = amp.linear %x, %w1 transpose_w = true activation = relu : tensor<32x64xf32>, tensor<128x64xf32>
  %dh = amp.matmul %dy, %w2 : tensor<32x16xf32>, tensor<16x128xf32>
  %zero = amp.constant dense<0.0> : tensor<f32>
  %m = amp.compare gt, %h, %zero : tensor<32x128xf32>, tensor<f32>
  %dz = amp.select %m, %dh, %zero : tensor<32x128xi1>, tensor<32x128xf32>, tensor<f32>
  return %h, %dz : tensor<32x128xf32>, tensor<32x128xf32>
}
}

// -----

// The intermediate gradient has another reader, so the dX GEMM cannot apply the mask: nothing
// changes. Likewise a -0 in the mask's select (the epilogue writes +0).
// CHECK-LABEL: func.func @shared_gradient
// CHECK-NOT: amp.gemm_epilogue
// CHECK: amp.linear
// CHECK: amp.fused
// CHECK-LABEL: func.func @negative_zero
// CHECK-NOT: amp.gemm_epilogue
// CHECK: amp.fused
module attributes {amp.target = "cuda:sm_90"} {
func.func @shared_gradient(%x: tensor<32x64xbf16>, %w1: tensor<64x128xbf16>, %w2: tensor<16x128xbf16>, %dy: tensor<32x16xbf16>) -> (tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<32x128xbf16>) {
  %h = amp.linear %x, %w1 transpose_w = false activation = relu : tensor<32x64xbf16>, tensor<64x128xbf16>
  %dh = amp.matmul %dy, %w2 : tensor<32x16xbf16>, tensor<16x128xbf16>
  %zero = amp.constant dense<0.0> : tensor<bf16>
  %m = amp.compare gt, %h, %zero : tensor<32x128xbf16>, tensor<bf16>
  %dz = amp.select %m, %dh, %zero : tensor<32x128xi1>, tensor<32x128xbf16>, tensor<bf16>
  return %h, %dz, %dh : tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<32x128xbf16>
}
func.func @negative_zero(%x: tensor<32x64xbf16>, %w1: tensor<64x128xbf16>, %w2: tensor<16x128xbf16>, %dy: tensor<32x16xbf16>) -> (tensor<32x128xbf16>, tensor<32x128xbf16>) {
  %h = amp.linear %x, %w1 transpose_w = false activation = relu : tensor<32x64xbf16>, tensor<64x128xbf16>
  %dh = amp.matmul %dy, %w2 : tensor<32x16xbf16>, tensor<16x128xbf16>
  %zero = amp.constant dense<-0.0> : tensor<bf16>
  %m = amp.compare gt, %h, %zero : tensor<32x128xbf16>, tensor<bf16>
  %dz = amp.select %m, %dh, %zero : tensor<32x128xi1>, tensor<32x128xbf16>, tensor<bf16>
  return %h, %dz : tensor<32x128xbf16>, tensor<32x128xbf16>
}
}

// -----

// A tanh GELU after a linear layer: GELU_AUX_BIAS keeps the GELU input for the backward, whose dX
// GEMM applies the GELU gradient and sums the bias gradient (DGELU_BGRAD).
// CHECK-LABEL: func.func @gelu_layer
// CHECK-NEXT: %[[F:.*]]:2 = amp.gemm_epilogue gelu_aux_bias %arg0, %arg1, %arg2 : tensor<32x64xbf16>, tensor<64x128xbf16>, tensor<128xbf16> -> tensor<32x128xbf16>, tensor<32x128xbf16>
// CHECK-NEXT: %[[B:.*]]:2 = amp.gemm_epilogue dgelu_bgrad %arg4, %arg3, %[[F]]#1 : tensor<32x16xbf16>, tensor<16x128xbf16>, tensor<32x128xbf16> -> tensor<32x128xbf16>, tensor<128xbf16>
// CHECK-NEXT: return %[[F]]#0, %[[B]]#0, %[[B]]#1
module attributes {amp.target = "cuda:sm_90"} {
func.func @gelu_layer(%x: tensor<32x64xbf16>, %w1: tensor<64x128xbf16>, %b1: tensor<128xbf16>, %w2: tensor<16x128xbf16>, %dy: tensor<32x16xbf16>) -> (tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<128xbf16>) {
  %pre = amp.linear %x, %w1, %b1 transpose_w = false : tensor<32x64xbf16>, tensor<64x128xbf16>, tensor<128xbf16>
  %h = amp.gelu %pre approximate = tanh : tensor<32x128xbf16>
  %dh = amp.matmul %dy, %w2 : tensor<32x16xbf16>, tensor<16x128xbf16>
  %dpre = amp.gelu_grad %pre, %dh approximate = tanh : tensor<32x128xbf16>
  %db = amp.reduce_sum %dpre dims = [0] : tensor<32x128xbf16>
  return %h, %dpre, %db : tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<128xbf16>
}
}

// -----

// Evaluation (nothing reads the GELU input again): GELU_BIAS. An exact (erf) GELU is not
// cuBLASLt's, and a GELU input with rows of 12 elements (not a multiple of 8) cannot be its aux
// matrix: both stay as they are.
// CHECK-LABEL: func.func @gelu_eval
// CHECK-NEXT: %[[F:.*]] = amp.gemm_epilogue gelu_bias %arg0, %arg1, %arg2 : tensor<32x64xbf16>, tensor<64x128xbf16>, tensor<128xbf16> -> tensor<32x128xbf16>{{$}}
// CHECK-NEXT: return %[[F]]
// CHECK-LABEL: func.func @erf_gelu
// CHECK-NOT: amp.gemm_epilogue
// CHECK: amp.gelu %{{.*}} : tensor<32x128xbf16>
// CHECK-LABEL: func.func @rows_of_12
// CHECK-NOT: amp.gemm_epilogue
// CHECK: amp.gelu_grad
module attributes {amp.target = "cuda:sm_90"} {
func.func @gelu_eval(%x: tensor<32x64xbf16>, %w1: tensor<64x128xbf16>, %b1: tensor<128xbf16>) -> tensor<32x128xbf16> {
  %pre = amp.linear %x, %w1, %b1 transpose_w = false : tensor<32x64xbf16>, tensor<64x128xbf16>, tensor<128xbf16>
  %h = amp.gelu %pre approximate = tanh : tensor<32x128xbf16>
  return %h : tensor<32x128xbf16>
}
func.func @erf_gelu(%x: tensor<32x64xbf16>, %w1: tensor<64x128xbf16>, %b1: tensor<128xbf16>) -> tensor<32x128xbf16> {
  %pre = amp.linear %x, %w1, %b1 transpose_w = false : tensor<32x64xbf16>, tensor<64x128xbf16>, tensor<128xbf16>
  %h = amp.gelu %pre approximate = none : tensor<32x128xbf16>
  return %h : tensor<32x128xbf16>
}
func.func @rows_of_12(%x: tensor<32x64xbf16>, %w1: tensor<64x12xbf16>, %b1: tensor<12xbf16>, %w2: tensor<16x12xbf16>, %dy: tensor<32x16xbf16>) -> (tensor<32x12xbf16>, tensor<32x12xbf16>) {
  %pre = amp.linear %x, %w1, %b1 transpose_w = false : tensor<32x64xbf16>, tensor<64x12xbf16>, tensor<12xbf16>
  %h = amp.gelu %pre approximate = tanh : tensor<32x12xbf16>
  %dh = amp.matmul %dy, %w2 : tensor<32x16xbf16>, tensor<16x12xbf16>
  %dpre = amp.gelu_grad %pre, %dh approximate = tanh : tensor<32x12xbf16>
  return %h, %dpre : tensor<32x12xbf16>, tensor<32x12xbf16>
}
}

// -----

// A bias gradient left as its own row sum of dY, read after the weight gradient x^T . dY: the
// GEMM sums it (BGRADB: dY is cuBLASLt's B). A sum read before the GEMM stays.
// CHECK-LABEL: func.func @bias_gradient
// CHECK-NEXT: %[[G:.*]]:2 = amp.gemm_epilogue bgrad_b %arg0, %arg1 transpose_a : tensor<32x64xf32>, tensor<32x16xf32> -> tensor<64x16xf32>, tensor<16xf32>
// CHECK-NEXT: return %[[G]]#0, %[[G]]#1
// CHECK-LABEL: func.func @sum_read_first
// CHECK-NOT: amp.gemm_epilogue
module attributes {amp.target = "cuda:sm_90"} {
func.func @bias_gradient(%x: tensor<32x64xf32>, %dy: tensor<32x16xf32>) -> (tensor<64x16xf32>, tensor<16xf32>) {
  %dw = amp.matmul %x, %dy transpose_a : tensor<32x64xf32>, tensor<32x16xf32>
  %db = amp.reduce_sum %dy dims = [0] : tensor<32x16xf32>
  return %dw, %db : tensor<64x16xf32>, tensor<16xf32>
}
func.func @sum_read_first(%x: tensor<32x64xf32>, %dy: tensor<32x16xf32>) -> (tensor<64x16xf32>, tensor<16xf32>) {
  %db = amp.reduce_sum %dy dims = [0] : tensor<32x16xf32>
  %db2 = amp.add %db, %db : tensor<16xf32>, tensor<16xf32>
  %dw = amp.matmul %x, %dy transpose_a : tensor<32x64xf32>, tensor<32x16xf32>
  return %dw, %db2 : tensor<64x16xf32>, tensor<16xf32>
}
}

// -----

// cuBLASLt epilogues exist only on cuda targets.
module attributes {amp.target = "cpu"} {
// expected-error @+1 {{amp-select-gemm-epilogues: cuBLASLt epilogues are for cuda targets; the module's target is 'cpu'}}
func.func @on_cpu(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  return %x : tensor<4x4xf32>
}
}
