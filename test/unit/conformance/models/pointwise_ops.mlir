// The pointwise ops no example model uses, in one trainable model, so the conformance suite runs
// each of them and its gradient on every device: abs, neg, log, sqrt, rsqrt, reciprocal, pow,
// maximum, minimum, tanh, erf, sigmoid, silu, dropout and broadcast_to. The inputs of log, sqrt, rsqrt,
// reciprocal and pow are 1 + |x|, so every value is finite whatever the batch.
func.func @pointwise_ops(
    %x: tensor<8x16xf32> {amp.role = "input", amp.name = "x"},
    %y: tensor<8x16xf32> {amp.role = "label", amp.name = "y"},
    %w: tensor<16x16xf32> {amp.role = "param", amp.name = "fc.weight", amp.init = #amp.init<xavier_uniform, seed = 1>},
    %b: tensor<16xf32> {amp.role = "param", amp.name = "fc.bias", amp.init = #amp.init<uniform, scale = 0.5, seed = 2>})
    -> (tensor<f32>, tensor<8x16xf32>) {
  %h = amp.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32>
  %one = amp.constant dense<1.0> : tensor<f32>
  %a = amp.abs %h : tensor<8x16xf32>
  %p = amp.add %a, %one : tensor<8x16xf32>, tensor<f32>
  %log = amp.log %p : tensor<8x16xf32>
  %sqrt = amp.sqrt %p : tensor<8x16xf32>
  %rsqrt = amp.rsqrt %p : tensor<8x16xf32>
  %rcp = amp.reciprocal %p : tensor<8x16xf32>
  %half = amp.constant dense<0.5> : tensor<f32>
  %pow = amp.pow %p, %half : tensor<8x16xf32>, tensor<f32>
  %neg = amp.neg %h : tensor<8x16xf32>
  %tanh0 = amp.tanh %neg : tensor<8x16xf32>
  %erf = amp.erf %h : tensor<8x16xf32>
  %tanh = amp.add %tanh0, %erf : tensor<8x16xf32>, tensor<8x16xf32>
  %sig = amp.sigmoid %h : tensor<8x16xf32>
  %silu = amp.silu %h : tensor<8x16xf32>
  %hi = amp.maximum %tanh, %sig : tensor<8x16xf32>, tensor<8x16xf32>
  %lo = amp.minimum %silu, %log : tensor<8x16xf32>, tensor<8x16xf32>
  %bb = amp.broadcast_to %b : tensor<16xf32> -> tensor<8x16xf32>
  %s0 = amp.add %hi, %lo : tensor<8x16xf32>, tensor<8x16xf32>
  %s1 = amp.add %s0, %sqrt : tensor<8x16xf32>, tensor<8x16xf32>
  %s2 = amp.sub %s1, %rsqrt : tensor<8x16xf32>, tensor<8x16xf32>
  %s3 = amp.mul %s2, %rcp : tensor<8x16xf32>, tensor<8x16xf32>
  %s4 = amp.add %s3, %pow : tensor<8x16xf32>, tensor<8x16xf32>
  %s5 = amp.mul %s4, %bb : tensor<8x16xf32>, tensor<8x16xf32>
  %out = amp.dropout %s5 rate = 0.25 seed = 11 : tensor<8x16xf32>
  %loss = amp.mse_loss %out, %y : tensor<8x16xf32>, tensor<8x16xf32>
  return %loss, %out : tensor<f32>, tensor<8x16xf32>
}
