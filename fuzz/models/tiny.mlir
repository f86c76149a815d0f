// A tiny classifier (8 features -> 4 classes, batch 4) for the checkpoint fuzzer: fuzz/CMakeLists.txt
// compiles it with ampc --train --precision=f16 --optimizer=adamw --clip-grad-norm=1 (so a checkpoint
// holds f32 params, their f16 copies, Adam moments, the dynamic loss scale, its growth tracker and
// the step counter), and scripts/fuzz.sh trains it for a few steps with amp-run to seed the corpus.
func.func @tiny(
    %x: tensor<4x8xf32> {amp.role = "input", amp.name = "x"},
    %y: tensor<4xi64> {amp.role = "label", amp.name = "y"},
    %w: tensor<8x4xf32> {amp.role = "param", amp.name = "fc.weight", amp.init = #amp.init<kaiming_uniform, seed = 1>},
    %b: tensor<4xf32> {amp.role = "param", amp.name = "fc.bias", amp.init = #amp.init<zeros>})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4x4xf32> {amp.name = "logits"}) {
  %h = amp.linear %x, %w, %b transpose_w = false : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4xf32>
  %loss = amp.cross_entropy %h, %y : tensor<4x4xf32>, tensor<4xi64>
  return %loss, %h : tensor<f32>, tensor<4x4xf32>
}
