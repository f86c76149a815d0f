// amp-remat moves a value first read after the peak next to that reader, whatever op makes it.
//
// RUN: amp-opt --amp-remat="auto=true" %s | FileCheck %s --check-prefix=AUTO-CHECK

// A value first read after the peak is made just before that reader, whatever op makes it (no
// FLOPs are added), when the operands it then keeps alive are smaller than it: %p (8 KiB) waits
// for its reader, keeping %q (4 KiB) alive instead (peak 24 KiB -> 20 KiB while %big is alive).
// AUTO-CHECK-LABEL: func.func @made_later
// AUTO-CHECK:      %[[Q:.*]] = amp.neg
// AUTO-CHECK-NEXT: amp.matmul %[[C:[a-z0-9]+]], %[[C]] : tensor<64x64xf32>
// AUTO-CHECK:      amp.broadcast_to
// AUTO-CHECK-NEXT: %[[P:.*]] = amp.matmul %[[Q]]
// AUTO-CHECK-NEXT: amp.add %[[P]]
func.func @made_later(%x: tensor<32x32xf32> {amp.role = "input", amp.name = "x"},
                      %k: tensor<32x64xf32> {amp.role = "param", amp.name = "k"},
                      %c: tensor<64x64xf32> {amp.role = "input", amp.name = "c"})
    -> tensor<32x64xf32> attributes {amp.entry = "train_step"} {
  %q = amp.neg %x : tensor<32x32xf32>
  %p = amp.matmul %q, %k : tensor<32x32xf32>, tensor<32x64xf32>
  %big = amp.matmul %c, %c : tensor<64x64xf32>, tensor<64x64xf32>
  %s = amp.reduce_sum %big dims = [0, 1] : tensor<64x64xf32>
  %sb = amp.broadcast_to %s : tensor<f32> -> tensor<32x64xf32>
  %w = amp.add %p, %sb : tensor<32x64xf32>, tensor<32x64xf32>
  return %w : tensor<32x64xf32>
}

// A returned value lives to the end of the step: neither moved nor recomputed for its other readers.
// AUTO-CHECK-LABEL: func.func @returned
// AUTO-CHECK:      %[[P:.*]] = amp.matmul %{{.*}}, %{{.*}} : tensor<32x32xf32>, tensor<32x64xf32>
// AUTO-CHECK-NEXT: amp.matmul %{{.*}}, %{{.*}} : tensor<64x64xf32>
// AUTO-CHECK-NOT:  amp.matmul %{{.*}}, %{{.*}} : tensor<32x32xf32>, tensor<32x64xf32>
// AUTO-CHECK:      return
func.func @returned(%x: tensor<32x32xf32> {amp.role = "input", amp.name = "x"},
                    %k: tensor<32x64xf32> {amp.role = "param", amp.name = "k"},
                    %c: tensor<64x64xf32> {amp.role = "input", amp.name = "c"})
    -> (tensor<32x64xf32>, tensor<32x64xf32>) attributes {amp.entry = "train_step"} {
  %p = amp.matmul %x, %k : tensor<32x32xf32>, tensor<32x64xf32>
  %big = amp.matmul %c, %c : tensor<64x64xf32>, tensor<64x64xf32>
  %s = amp.reduce_sum %big dims = [0, 1] : tensor<64x64xf32>
  %sb = amp.broadcast_to %s : tensor<f32> -> tensor<32x64xf32>
  %w = amp.add %p, %sb : tensor<32x64xf32>, tensor<32x64xf32>
  return %w, %p : tensor<32x64xf32>, tensor<32x64xf32>
}
