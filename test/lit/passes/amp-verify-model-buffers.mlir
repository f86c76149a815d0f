// RUN: amp-opt %s --split-input-file --amp-verify-model --verify-diagnostics
// RUN: amp-opt %s --split-input-file --amp-verify-model --verify-diagnostics | FileCheck %s
// The model convention's buffers (docs/model-convention.md, "Buffers"): f32, initialised, and the
// running mean or variance of exactly one amp.batch_norm.

// CHECK-LABEL: func.func @valid
// CHECK: amp.role = "buffer"
func.func @valid(%x: tensor<4x2xf32> {amp.role = "input", amp.name = "x"},
                 %g: tensor<2xf32> {amp.role = "param", amp.name = "bn.weight", amp.init = #amp.init<ones>},
                 %b: tensor<2xf32> {amp.role = "param", amp.name = "bn.bias", amp.init = #amp.init<zeros>},
                 %rm: tensor<2xf32> {amp.role = "buffer", amp.name = "bn.running_mean", amp.init = #amp.init<zeros>},
                 %rv: tensor<2xf32> {amp.role = "buffer", amp.name = "bn.running_var", amp.init = dense<[1.0, 2.0]> : tensor<2xf32>})
    -> tensor<f32> {
  %y, %m, %v = amp.batch_norm %x, %g, %b running(%rm, %rv) training : tensor<4x2xf32>, tensor<2xf32>
  %loss = amp.mse_loss %y, %x : tensor<4x2xf32>, tensor<4x2xf32>
  return %loss : tensor<f32>
}

// -----

func.func @no_init(%x: tensor<4x2xf32> {amp.role = "input", amp.name = "x"},
                   %g: tensor<2xf32> {amp.role = "param", amp.name = "g"},
                   // expected-error @+1 {{model 'no_init': buffer 'rm' needs amp.init (its initial value, e.g. #amp.init<zeros> for a running mean, #amp.init<ones> for a running variance)}}
                   %rm: tensor<2xf32> {amp.role = "buffer", amp.name = "rm"},
                   %rv: tensor<2xf32> {amp.role = "buffer", amp.name = "rv", amp.init = #amp.init<ones>})
    -> tensor<f32> {
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%rm, %rv) training : tensor<4x2xf32>, tensor<2xf32>
  %loss = amp.mse_loss %y, %x : tensor<4x2xf32>, tensor<4x2xf32>
  return %loss : tensor<f32>
}

// -----

func.func @not_f32(%x: tensor<4x2xf32> {amp.role = "input", amp.name = "x"},
                   // expected-error @+1 {{model 'not_f32': buffer 'count' must be f32 (running statistics are kept in f32), got 'tensor<2xi64>'}}
                   %c: tensor<2xi64> {amp.role = "buffer", amp.name = "count", amp.init = #amp.init<zeros>})
    -> tensor<f32> {
  %loss = amp.mse_loss %x, %x : tensor<4x2xf32>, tensor<4x2xf32>
  return %loss : tensor<f32>
}

// -----

func.func @read_elsewhere(%x: tensor<4x2xf32> {amp.role = "input", amp.name = "x"},
                          %g: tensor<2xf32> {amp.role = "param", amp.name = "g"},
                          %rm: tensor<2xf32> {amp.role = "buffer", amp.name = "rm", amp.init = #amp.init<zeros>})
    -> tensor<f32> {
  // expected-error @+1 {{model 'read_elsewhere': buffer 'rm' is read by 'amp.add'; a buffer is only the running mean or variance of one amp.batch_norm}}
  %s = amp.add %g, %rm : tensor<2xf32>, tensor<2xf32>
  %loss = amp.mse_loss %s, %g : tensor<2xf32>, tensor<2xf32>
  return %loss : tensor<f32>
}

// -----

func.func @shared(%x: tensor<4x2xf32> {amp.role = "input", amp.name = "x"},
                  %g: tensor<2xf32> {amp.role = "param", amp.name = "g"},
                  %rm: tensor<2xf32> {amp.role = "buffer", amp.name = "rm", amp.init = #amp.init<zeros>},
                  // expected-error @+1 {{model 'shared': buffer 'rv' is read by 2 ops; each amp.batch_norm needs its own running statistics}}
                  %rv: tensor<2xf32> {amp.role = "buffer", amp.name = "rv", amp.init = #amp.init<ones>},
                  %rm2: tensor<2xf32> {amp.role = "buffer", amp.name = "rm2", amp.init = #amp.init<zeros>})
    -> tensor<f32> {
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%rm, %rv) training : tensor<4x2xf32>, tensor<2xf32>
  %y2, %m2, %v2 = amp.batch_norm %y, %g, %g running(%rm2, %rv) training : tensor<4x2xf32>, tensor<2xf32>
  %loss = amp.mse_loss %y2, %x : tensor<4x2xf32>, tensor<4x2xf32>
  return %loss : tensor<f32>
}

// -----

func.func @stats_twice(%x: tensor<4x2xf32> {amp.role = "input", amp.name = "x"},
                       %g: tensor<2xf32> {amp.role = "param", amp.name = "g"},
                       // expected-error @+1 {{model 'stats_twice': buffer 'r' is read by 2 ops}}
                       %r: tensor<2xf32> {amp.role = "buffer", amp.name = "r", amp.init = #amp.init<zeros>})
    -> tensor<f32> {
  // expected-error @+1 {{model 'stats_twice': buffer 'r' is read by 'amp.batch_norm'; a buffer is only the running mean or variance of one amp.batch_norm}}
  %y, %m, %v = amp.batch_norm %x, %g, %g running(%r, %r) training : tensor<4x2xf32>, tensor<2xf32>
  %loss = amp.mse_loss %y, %x : tensor<4x2xf32>, tensor<4x2xf32>
  return %loss : tensor<f32>
}
