// RUN: amp-opt %s --split-input-file --amp-grads-entry --verify-diagnostics

// expected-error @+1 {{amp-grads-entry: @train_step has no amp.unscale_check; run amp-loss-scaling first}}
func.func @train_step(
    %w: tensor<4xf32> {amp.role = "param", amp.name = "w"},
    %seed: tensor<f32> {amp.role = "state", amp.name = "amp.grad_seed"})
    -> (tensor<f32> {amp.name = "loss"}, tensor<4xf32> {amp.grad_of = "w"})
    attributes {amp.entry = "train_step"} {
  %loss = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
  %g = amp.mul %w, %seed : tensor<4xf32>, tensor<f32>
  return %loss, %g : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{amp-grads-entry: no function with amp.entry = "train_step"; run amp-autodiff first}}
module {
  func.func @model(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"}) -> tensor<f32> {
    %l = amp.mse_loss %w, %w : tensor<4xf32>, tensor<4xf32>
    return %l : tensor<f32>
  }
}
