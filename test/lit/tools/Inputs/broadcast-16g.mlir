func.func @bcast(%x: tensor<256xf32> {amp.role = "input", amp.name = "x"}) -> tensor<f32> {
  %b = amp.broadcast_to %x : tensor<256xf32> -> tensor<16777216x256xf32>
  %s = amp.reduce_sum %b dims = [0, 1] : tensor<16777216x256xf32>
  return %s : tensor<f32>
}
