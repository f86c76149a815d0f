// amp-remat recomputes a softmax (one pass over each row, within `auto`) from a narrower value kept
// alive for it, when its producer is too dear to recompute: the f32 probabilities of a bf16
// attention are recomputed from its bf16 scores, half their size.
//
// RUN: amp-opt --split-input-file --amp-remat="auto=true" %s | FileCheck %s --check-prefix=AUTO-CHECK

// %p (4 KiB, f32) is read by the forward (%u) and again after the peak (the matmul that makes
// %big); its producer's input %c died at the softmax, and %c's own producer is a GEMM. Keeping %s
// (2 KiB, bf16) alive instead frees 2 KiB at the peak: the cast and the softmax run again there.
// AUTO-CHECK-LABEL: func.func @kept_scores
// AUTO-CHECK:      %[[S:.*]] = amp.matmul %{{.*}}, %{{.*}} : tensor<32x16xbf16>, tensor<16x32xbf16>
// AUTO-CHECK:      amp.matmul %{{.*}}, %{{.*}} : tensor<64x64xf32>, tensor<64x64xf32>
// AUTO-CHECK:      %[[C2:.*]] = amp.cast %[[S]] {amp.origin = "remat"} : tensor<32x32xbf16> to tensor<32x32xf32>
// AUTO-CHECK-NEXT: %[[P2:.*]] = amp.softmax %[[C2]] axis = 1 {amp.origin = "remat"}
// AUTO-CHECK-NEXT: amp.mul %[[P2]]
func.func @kept_scores(%q: tensor<32x16xbf16> {amp.role = "input", amp.name = "q"},
                       %k: tensor<16x32xbf16> {amp.role = "param", amp.name = "k"},
                       %a: tensor<64x64xf32> {amp.role = "input", amp.name = "a"})
    -> (tensor<32x32xf32>, tensor<32x32xf32>) attributes {amp.entry = "train_step"} {
  %s = amp.matmul %q, %k : tensor<32x16xbf16>, tensor<16x32xbf16>
  %c = amp.cast %s : tensor<32x32xbf16> to tensor<32x32xf32>
  %p = amp.softmax %c axis = 1 : tensor<32x32xf32>
  %u = amp.neg %p : tensor<32x32xf32>
  %big = amp.matmul %a, %a : tensor<64x64xf32>, tensor<64x64xf32>
  %r = amp.reduce_sum %big dims = [0, 1] : tensor<64x64xf32>
  %rb = amp.broadcast_to %r : tensor<f32> -> tensor<32x32xf32>
  %w = amp.mul %p, %rb : tensor<32x32xf32>, tensor<32x32xf32>
  return %u, %w : tensor<32x32xf32>, tensor<32x32xf32>
}

// -----

// The same, but the kept %s would now be alive at %f (19 KiB, read by the forward after the
// softmax): 4 + 19 + 2 KiB there is more than the 24 KiB peak at %big, so nothing changes.
// AUTO-CHECK-LABEL: func.func @kept_scores_would_raise
// AUTO-CHECK-COUNT-1: amp.softmax
// AUTO-CHECK-NOT:     amp.softmax
// AUTO-CHECK-NOT:     amp.cast
// AUTO-CHECK:         return
func.func @kept_scores_would_raise(%q: tensor<32x16xbf16> {amp.role = "input", amp.name = "q"},
                                   %k: tensor<16x32xbf16> {amp.role = "param", amp.name = "k"},
                                   %e: tensor<76x64xf32> {amp.role = "input", amp.name = "e"},
                                   %a: tensor<64x64xf32> {amp.role = "input", amp.name = "a"})
    -> (tensor<32x32xf32>, tensor<32x32xf32>) attributes {amp.entry = "train_step"} {
  %s = amp.matmul %q, %k : tensor<32x16xbf16>, tensor<16x32xbf16>
  %c = amp.cast %s : tensor<32x32xbf16> to tensor<32x32xf32>
  %p = amp.softmax %c axis = 1 : tensor<32x32xf32>
  %f = amp.exp %e : tensor<76x64xf32>
  %fs = amp.reduce_sum %f dims = [0, 1] : tensor<76x64xf32>
  %fb = amp.broadcast_to %fs : tensor<f32> -> tensor<32x32xf32>
  %u = amp.add %p, %fb : tensor<32x32xf32>, tensor<32x32xf32>
  %big = amp.matmul %a, %a : tensor<64x64xf32>, tensor<64x64xf32>
  %r = amp.reduce_sum %big dims = [0, 1] : tensor<64x64xf32>
  %rb = amp.broadcast_to %r : tensor<f32> -> tensor<32x32xf32>
  %w = amp.mul %p, %rb : tensor<32x32xf32>, tensor<32x32xf32>
  return %u, %w : tensor<32x32xf32>, tensor<32x32xf32>
}

// -----

// At 72x64 (18 KiB) the kept %s leaves that position at the peak's 24 KiB: not worse, so the
// change stands while the pass looks further, but the step's estimate has not fallen when nothing
// else can go, and `auto` then leaves the step as it found it.
// AUTO-CHECK-LABEL: func.func @kept_scores_level
// AUTO-CHECK-COUNT-1: amp.softmax
// AUTO-CHECK-NOT:     amp.softmax
// AUTO-CHECK:         return
func.func @kept_scores_level(%q: tensor<32x16xbf16> {amp.role = "input", amp.name = "q"},
                             %k: tensor<16x32xbf16> {amp.role = "param", amp.name = "k"},
                             %e: tensor<72x64xf32> {amp.role = "input", amp.name = "e"},
                             %a: tensor<64x64xf32> {amp.role = "input", amp.name = "a"})
    -> (tensor<32x32xf32>, tensor<32x32xf32>) attributes {amp.entry = "train_step"} {
  %s = amp.matmul %q, %k : tensor<32x16xbf16>, tensor<16x32xbf16>
  %c = amp.cast %s : tensor<32x32xbf16> to tensor<32x32xf32>
  %p = amp.softmax %c axis = 1 : tensor<32x32xf32>
  %f = amp.exp %e : tensor<72x64xf32>
  %fs = amp.reduce_sum %f dims = [0, 1] : tensor<72x64xf32>
  %fb = amp.broadcast_to %fs : tensor<f32> -> tensor<32x32xf32>
  %u = amp.add %p, %fb : tensor<32x32xf32>, tensor<32x32xf32>
  %big = amp.matmul %a, %a : tensor<64x64xf32>, tensor<64x64xf32>
  %r = amp.reduce_sum %big dims = [0, 1] : tensor<64x64xf32>
  %rb = amp.broadcast_to %r : tensor<f32> -> tensor<32x32xf32>
  %w = amp.mul %p, %rb : tensor<32x32xf32>, tensor<32x32xf32>
  return %u, %w : tensor<32x32xf32>, tensor<32x32xf32>
}
