// amp-remat with fusion-aware=true (what ampc sets when amp-fuse runs after it) estimates the step
// as amp-fuse will leave it: values read only inside one fused region take no memory, the region
// makes its results and reads its inputs at its last op, and a relu folded into its linear layer
// shares the layer's result. A budget of 100 bytes fails everywhere, and the error says the estimate.
//
// RUN: not amp-opt --split-input-file --amp-remat="budget=100" %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAIN-CHECK
// RUN: not amp-opt --split-input-file --amp-remat="budget=100 fusion-aware=true" %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=FUSED-CHECK

// neg -> exp -> mul is one region: %a and %b are never stored, %c is made at the mul.
// PLAIN-CHECK: error: amp-remat: the step needs an estimated 12288 bytes (arguments 4096 + temporaries 8192 alive at op #1)
// FUSED-CHECK: error: amp-remat: the step needs an estimated 8192 bytes (arguments 4096 + temporaries 4096 alive at op #2)
func.func @chain(%x: tensor<32x32xf32> {amp.role = "input", amp.name = "x"})
    -> tensor<32x32xf32> attributes {amp.entry = "train_step"} {
  %a = amp.neg %x : tensor<32x32xf32>
  %b = amp.exp %a : tensor<32x32xf32>
  %c = amp.mul %b, %x : tensor<32x32xf32>, tensor<32x32xf32>
  return %c : tensor<32x32xf32>
}

// -----

// A region joins producers, not neighbours: neg, exp, add and mul are one kernel placed at the mul,
// after the matmul, so %a, %b and %c are never stored; the plain estimate holds %a and %b with %m.
// PLAIN-CHECK: error: amp-remat: the step needs an estimated 20480 bytes (arguments 8192 + temporaries 12288 alive at op #2)
// FUSED-CHECK: error: amp-remat: the step needs an estimated 16384 bytes (arguments 8192 + temporaries 8192 alive at op #4)
func.func @region_reads_at_its_anchor(%x: tensor<32x32xf32> {amp.role = "input", amp.name = "x"},
                                      %w: tensor<32x32xf32> {amp.role = "param", amp.name = "w"})
    -> tensor<32x32xf32> attributes {amp.entry = "train_step"} {
  %a = amp.neg %x : tensor<32x32xf32>
  %b = amp.exp %a : tensor<32x32xf32>
  %m = amp.matmul %w, %w : tensor<32x32xf32>, tensor<32x32xf32>
  %c = amp.add %b, %a : tensor<32x32xf32>, tensor<32x32xf32>
  %d = amp.mul %c, %m : tensor<32x32xf32>, tensor<32x32xf32>
  return %d : tensor<32x32xf32>
}

// -----

// A relu that is the linear layer's only reader becomes its activation: one 2 KiB result, not two.
// PLAIN-CHECK: error: amp-remat: the step needs an estimated 10368 bytes (arguments 6272 + temporaries 4096 alive at op #1)
// FUSED-CHECK: error: amp-remat: the step needs an estimated 8320 bytes (arguments 6272 + temporaries 2048 alive at op #0)
func.func @relu_folded(%x: tensor<16x32xf32> {amp.role = "input", amp.name = "x"},
                       %w: tensor<32x32xf32> {amp.role = "param", amp.name = "w"},
                       %bias: tensor<32xf32> {amp.role = "param", amp.name = "b"})
    -> tensor<16x32xf32> attributes {amp.entry = "train_step"} {
  %h = amp.linear %x, %w, %bias : tensor<16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
  %r = amp.relu %h : tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}
