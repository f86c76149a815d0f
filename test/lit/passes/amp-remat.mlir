// amp-remat: at the estimated memory peak, a value made by a cheap op and read again after the
// peak is recomputed just before that reader, from operands alive there (or recomputed too, under
// a budget); a value not read before the peak is made later instead. Only training entries.
//
// RUN: amp-opt --split-input-file --amp-remat="auto=true" %s | FileCheck %s --check-prefix=AUTO-CHECK
// RUN: amp-opt --split-input-file --amp-remat="budget=9000" %s | FileCheck %s --check-prefix=BUDGET-CHECK
// RUN: not amp-opt --split-input-file --amp-remat="budget=100" %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIGHT-CHECK
// The conv/batch-norm case alone (the other splits cannot go as low): a budget of 8600 bytes.
// RUN: not amp-opt --split-input-file --amp-remat="budget=8600" %s 2>/dev/null | FileCheck %s --check-prefix=NORM-CHECK
// And through ampc: the memory report says what was recomputed.
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --remat=auto --emit=memory-report | FileCheck %s --check-prefix=REPORT-CHECK
// REPORT-CHECK: Recomputed in the backward (amp-remat): {{[1-9][0-9]*}} ops, {{.*}} MFLOP
// The report counts the clones by their amp.origin, not their locations: without locations it is
// the same, line for line.
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --remat=auto --emit=memory-report > %t.report
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --remat=auto --emit=memory-report --strip-debuginfo | diff %t.report -
// RUN: not ampc %amp_src_root/examples/mlp.mlir --remat=auto 2>&1 | FileCheck %s --check-prefix=NOTRAIN-CHECK
// NOTRAIN-CHECK: ampc: --remat and --memory-budget need --train
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --memory-budget=lots 2>&1 | FileCheck %s --check-prefix=BADBUDGET-CHECK
// BADBUDGET-CHECK: ampc: --memory-budget must be a positive byte count such as 4194304, 512k or 2m, got 'lots'

// %h = exp(%x) is read by the forward (%y) and again after the peak (the matmul that holds %big):
// it is recomputed there from %x, which the last op reads anyway.
// AUTO-CHECK-LABEL: func.func @cheap_value
// AUTO-CHECK:      %[[H:.*]] = amp.exp %[[X:.*]] : tensor<16xf32>
// AUTO-CHECK:      amp.matmul
// AUTO-CHECK:      %[[H2:.*]] = amp.exp %[[X]] {amp.origin = "remat"} : tensor<16xf32>
// AUTO-CHECK-NEXT: amp.mul %[[H2]]
func.func @cheap_value(%x: tensor<16xf32> {amp.role = "input", amp.name = "x"},
                       %a: tensor<16x16xf32> {amp.role = "input", amp.name = "a"})
    -> (tensor<16xf32>, tensor<16xf32>) attributes {amp.entry = "train_step"} {
  %h = amp.exp %x : tensor<16xf32>
  %y = amp.neg %h : tensor<16xf32>
  %big = amp.matmul %a, %a : tensor<16x16xf32>, tensor<16x16xf32>
  %s = amp.reduce_sum %big dims = [0] : tensor<16x16xf32>
  %z = amp.mul %h, %s : tensor<16xf32>, tensor<16xf32>
  %w = amp.add %z, %x : tensor<16xf32>, tensor<16xf32>
  return %y, %w : tensor<16xf32>, tensor<16xf32>
}

// -----

// The model's own function (no amp.entry) is left alone.
// AUTO-CHECK-LABEL: func.func @not_an_entry
// AUTO-CHECK-COUNT-1: amp.exp
// AUTO-CHECK-NOT: amp.exp
func.func @not_an_entry(%x: tensor<16xf32> {amp.role = "input", amp.name = "x"},
                        %a: tensor<16x16xf32> {amp.role = "input", amp.name = "a"}) -> (tensor<16xf32>, tensor<16xf32>) {
  %h = amp.exp %x : tensor<16xf32>
  %y = amp.neg %h : tensor<16xf32>
  %big = amp.matmul %a, %a : tensor<16x16xf32>, tensor<16x16xf32>
  %s = amp.reduce_sum %big dims = [0] : tensor<16x16xf32>
  %z = amp.mul %h, %s : tensor<16xf32>, tensor<16xf32>
  %w = amp.add %z, %x : tensor<16xf32>, tensor<16xf32>
  return %y, %w : tensor<16xf32>, tensor<16xf32>
}

// -----

// Under a budget a GEMM is recomputed, with the cheap op between it and its reader: %t =
// transpose(matmul(%a, %b)) is read before and after the peak; neither is alive at the later
// reader, %a and %b (arguments) are.
// BUDGET-CHECK-LABEL: func.func @gemm_chain
// BUDGET-CHECK:      amp.matmul %[[A:[a-z0-9]+]], %[[B:[a-z0-9]+]]
// BUDGET-CHECK:      amp.matmul %{{.*}}, %{{.*}} : tensor<32x32xf32>
// BUDGET-CHECK:      %[[M2:.*]] = amp.matmul %[[A]], %[[B]] {amp.origin = "remat"}
// BUDGET-CHECK-NEXT: %[[T2:.*]] = amp.transpose %[[M2]] {{.*}}
// BUDGET-CHECK-NEXT: amp.add %[[T2]]
// TIGHT-CHECK: error: amp-remat: the step needs an estimated 8964 bytes (arguments 4608 + temporaries 4356 alive at op #4), over the budget of 100 bytes; nothing alive there can be recomputed (casts, elementwise math, copies, softmax, layer and RMS norms, GEMMs, convolutions, batch norms; chains of up to 8 ops)
// The error names what is alive at that peak, largest first, where it was made and last read.
// TIGHT-CHECK: note: alive there: 4096 bytes made by 'amp.matmul' at op #3, last read at op #4
func.func @gemm_chain(%a: tensor<8x8xf32> {amp.role = "param", amp.name = "a"},
                      %b: tensor<8x8xf32> {amp.role = "param", amp.name = "b"},
                      %c: tensor<32x32xf32> {amp.role = "input", amp.name = "c"})
    -> (tensor<8x8xf32>, tensor<8x8xf32>) attributes {amp.entry = "train_step"} {
  %m = amp.matmul %a, %b : tensor<8x8xf32>, tensor<8x8xf32>
  %t = amp.transpose %m permutation = [1, 0] : tensor<8x8xf32>
  %u = amp.neg %t : tensor<8x8xf32>
  %big = amp.matmul %c, %c : tensor<32x32xf32>, tensor<32x32xf32>
  %s = amp.reduce_sum %big dims = [0, 1] : tensor<32x32xf32>
  %sb = amp.broadcast_to %s : tensor<f32> -> tensor<8x8xf32>
  %v = amp.add %t, %sb : tensor<8x8xf32>, tensor<8x8xf32>
  return %u, %v : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A batch norm is recomputed with the cheap op after it (its batch statistics come along unread):
// %r = relu(batch_norm(%x)) is read before and after the peak; %x (an input) is alive there.
// NORM-CHECK-LABEL: func.func @norm_block
// NORM-CHECK:      amp.batch_norm
// NORM-CHECK:      amp.matmul %{{.*}}, %{{.*}} : tensor<32x32xf32>
// NORM-CHECK:      %[[Y2:.*]], %{{.*}}, %{{.*}} = amp.batch_norm %[[X:[a-z0-9]+]]
// NORM-CHECK-NEXT: %[[R2:.*]] = amp.relu %[[Y2]]
// NORM-CHECK-NEXT: amp.add %[[R2]]
func.func @norm_block(%x: tensor<4x8xf32> {amp.role = "input", amp.name = "x"},
                      %g: tensor<8xf32> {amp.role = "param", amp.name = "g"},
                      %rs: tensor<8xf32> {amp.role = "buffer", amp.name = "rs"},
                      %c: tensor<32x32xf32> {amp.role = "input", amp.name = "c"})
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) attributes {amp.entry = "train_step"} {
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%rs, %rs) training : tensor<4x8xf32>, tensor<8xf32>
  %r = amp.relu %y : tensor<4x8xf32>
  %u = amp.neg %r : tensor<4x8xf32>
  %big = amp.matmul %c, %c : tensor<32x32xf32>, tensor<32x32xf32>
  %s = amp.reduce_sum %big dims = [0, 1] : tensor<32x32xf32>
  %sb = amp.broadcast_to %s : tensor<f32> -> tensor<4x8xf32>
  %w = amp.add %r, %sb : tensor<4x8xf32>, tensor<4x8xf32>
  return %u, %w, %x : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// softmax writes its result over an input read for the last time there (the memory planner's
// inPlacePairs), so the estimate counts one 4 KiB buffer at op #1, not two.
// TIGHT-CHECK: error: amp-remat: the step needs an estimated 8192 bytes (arguments 4096 + temporaries 4096 alive at op #0)
func.func @softmax_over_its_input(%x: tensor<32x32xf32> {amp.role = "input", amp.name = "x"})
    -> tensor<32x32xf32> attributes {amp.entry = "train_step"} {
  %e = amp.neg %x : tensor<32x32xf32>
  %p = amp.softmax %e axis = 1 : tensor<32x32xf32>
  return %p : tensor<32x32xf32>
}
