// amp-remat `auto` recomputes at most 2% of the step's estimated FLOPs; a budget has no such cap.
// A chain of 8 tanh (16384 FLOPs each at 64x64) is read again after a 64x512x64 GEMM (4194304
// FLOPs): the step is 4358144 FLOPs, so `auto` recomputes 5 tanh (81920) and not a 6th (98304 >
// 87162), while a budget of 330000 bytes (arguments 278528 + 51472) recomputes 28.
//
// RUN: amp-opt --amp-remat="auto=true" %s | FileCheck %s --check-prefix=AUTO-CHECK
// RUN: amp-opt --amp-remat="budget=330000" %s | FileCheck %s --check-prefix=BUDGET-CHECK

// AUTO-CHECK-LABEL:  func.func @capped
// AUTO-CHECK-COUNT-13: amp.tanh
// AUTO-CHECK-NOT:     amp.tanh
// BUDGET-CHECK-LABEL: func.func @capped
// BUDGET-CHECK-COUNT-36: amp.tanh
// BUDGET-CHECK-NOT:      amp.tanh
func.func @capped(%x: tensor<64x64xf32> {amp.role = "input", amp.name = "x"},
                  %a: tensor<64x512xf32> {amp.role = "input", amp.name = "a"},
                  %b: tensor<512x64xf32> {amp.role = "input", amp.name = "b"})
    -> (tensor<64x64xf32>) attributes {amp.entry = "train_step"} {
  %t1 = amp.tanh %x : tensor<64x64xf32>
  %t2 = amp.tanh %t1 : tensor<64x64xf32>
  %t3 = amp.tanh %t2 : tensor<64x64xf32>
  %t4 = amp.tanh %t3 : tensor<64x64xf32>
  %t5 = amp.tanh %t4 : tensor<64x64xf32>
  %t6 = amp.tanh %t5 : tensor<64x64xf32>
  %t7 = amp.tanh %t6 : tensor<64x64xf32>
  %t8 = amp.tanh %t7 : tensor<64x64xf32>
  %big = amp.matmul %a, %b : tensor<64x512xf32>, tensor<512x64xf32>
  %m8 = amp.mul %big, %t8 : tensor<64x64xf32>, tensor<64x64xf32>
  %m7 = amp.mul %m8, %t7 : tensor<64x64xf32>, tensor<64x64xf32>
  %m6 = amp.mul %m7, %t6 : tensor<64x64xf32>, tensor<64x64xf32>
  %m5 = amp.mul %m6, %t5 : tensor<64x64xf32>, tensor<64x64xf32>
  %m4 = amp.mul %m5, %t4 : tensor<64x64xf32>, tensor<64x64xf32>
  %m3 = amp.mul %m4, %t3 : tensor<64x64xf32>, tensor<64x64xf32>
  %m2 = amp.mul %m3, %t2 : tensor<64x64xf32>, tensor<64x64xf32>
  %m1 = amp.mul %m2, %t1 : tensor<64x64xf32>, tensor<64x64xf32>
  return %m1 : tensor<64x64xf32>
}
