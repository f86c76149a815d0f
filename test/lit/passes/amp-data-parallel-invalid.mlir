// RUN: amp-opt %s --split-input-file --amp-data-parallel --verify-diagnostics
// RUN: not amp-opt %s --split-input-file --amp-data-parallel="bucket-bytes=0" 2>&1 | FileCheck %s --check-prefix=BUCKET
// BUCKET: amp-data-parallel: bucket-bytes must be >= 1, got 0

// A module without a training step.
// expected-error @+1 {{amp-data-parallel: no function with amp.entry = "train_step"; compile with --train}}
module {
  func.func @mlp(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) -> (tensor<f32> {amp.name = "loss"}) {
    %l = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
    return %l : tensor<f32>
  }
}

// -----

// A step whose gradients are not checked and consumed yet (amp-loss-scaling and amp-optimizer
// have not run).
module {
  // expected-error @+1 {{amp-data-parallel: @train_step needs one amp.unscale_check and the optimizer step; run amp-loss-scaling and amp-optimizer first}}
  func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"})
      -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"}) attributes {amp.entry = "train_step"} {
    %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
    return %l, %w : tensor<f32>, tensor<4xf32>
  }
}

// -----

// Twice: the step already reduces.
module attributes {amp.data_parallel = #amp.data_parallel<reduce = f32>} {
  // expected-error @+1 {{amp-data-parallel: @train_step is already data-parallel}}
  func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"})
      -> (tensor<f32> {amp.name = "loss"}) attributes {amp.entry = "train_step"} {
    %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
    return %l : tensor<f32>
  }
}
