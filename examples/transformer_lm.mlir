// A one-block transformer language model (GPT-style, pre-norm) over a 64-token vocabulary.
// Batch B = 8 sequences of T = 32 token ids; d_model = 64, 4 heads of size 16, MLP 64 -> 256 -> 64.
// The labels are the next tokens, flattened to [B*T]; the loss is the mean cross-entropy.
// Every nn.Linear is one amp.linear (the bias, where there is one, added in f32 before the one
// rounding); weights are stored [in, out], hence transpose_w = false.
// Shapes are static: change B or T in every type to train with another batch or context length.
func.func @transformer_lm(
    %ids: tensor<8x32xi64> {amp.role = "input", amp.name = "tokens"},
    %labels: tensor<256xi64> {amp.role = "label", amp.name = "next_tokens"},
    %tok_emb: tensor<64x64xf32> {amp.role = "param", amp.name = "tok_emb.weight", amp.init = #amp.init<normal, scale = 0.02, seed = 1>},
    %pos_emb: tensor<32x64xf32> {amp.role = "param", amp.name = "pos_emb.weight", amp.init = #amp.init<normal, scale = 0.02, seed = 2>},
    %ln1_w: tensor<64xf32> {amp.role = "param", amp.name = "block.ln1.weight", amp.init = #amp.init<ones>},
    %ln1_b: tensor<64xf32> {amp.role = "param", amp.name = "block.ln1.bias", amp.init = #amp.init<zeros>},
    %wq: tensor<64x64xf32> {amp.role = "param", amp.name = "block.attn.q.weight", amp.init = #amp.init<xavier_uniform, seed = 3>},
    %wk: tensor<64x64xf32> {amp.role = "param", amp.name = "block.attn.k.weight", amp.init = #amp.init<xavier_uniform, seed = 4>},
    %wv: tensor<64x64xf32> {amp.role = "param", amp.name = "block.attn.v.weight", amp.init = #amp.init<xavier_uniform, seed = 5>},
    %wo: tensor<64x64xf32> {amp.role = "param", amp.name = "block.attn.out.weight", amp.init = #amp.init<xavier_uniform, seed = 6>},
    %bo: tensor<64xf32> {amp.role = "param", amp.name = "block.attn.out.bias", amp.init = #amp.init<zeros>},
    %ln2_w: tensor<64xf32> {amp.role = "param", amp.name = "block.ln2.weight", amp.init = #amp.init<ones>},
    %ln2_b: tensor<64xf32> {amp.role = "param", amp.name = "block.ln2.bias", amp.init = #amp.init<zeros>},
    %w1: tensor<64x256xf32> {amp.role = "param", amp.name = "block.mlp.fc1.weight", amp.init = #amp.init<xavier_uniform, seed = 7>},
    %b1: tensor<256xf32> {amp.role = "param", amp.name = "block.mlp.fc1.bias", amp.init = #amp.init<zeros>},
    %w2: tensor<256x64xf32> {amp.role = "param", amp.name = "block.mlp.fc2.weight", amp.init = #amp.init<xavier_uniform, seed = 8>},
    %b2: tensor<64xf32> {amp.role = "param", amp.name = "block.mlp.fc2.bias", amp.init = #amp.init<zeros>},
    %lnf_w: tensor<64xf32> {amp.role = "param", amp.name = "ln_f.weight", amp.init = #amp.init<ones>},
    %lnf_b: tensor<64xf32> {amp.role = "param", amp.name = "ln_f.bias", amp.init = #amp.init<zeros>},
    %w_lm: tensor<64x64xf32> {amp.role = "param", amp.name = "lm_head.weight", amp.init = #amp.init<xavier_uniform, seed = 9>})
    -> (tensor<f32> {amp.name = "loss"}, tensor<256x64xf32> {amp.name = "logits"}) {
  // Token embedding plus learned positional embedding (broadcast over the batch).
  %tok = amp.embedding %tok_emb[%ids] : tensor<64x64xf32>, tensor<8x32xi64>
  %x0 = amp.add %tok, %pos_emb : tensor<8x32x64xf32>, tensor<32x64xf32>

  // --- Causal self-attention (pre-norm) ---
  %h1 = amp.layer_norm %x0 weight(%ln1_w : tensor<64xf32>) bias(%ln1_b : tensor<64xf32>) : tensor<8x32x64xf32>
  %q = amp.linear %h1, %wq transpose_w = false : tensor<8x32x64xf32>, tensor<64x64xf32>
  %k = amp.linear %h1, %wk transpose_w = false : tensor<8x32x64xf32>, tensor<64x64xf32>
  %v = amp.linear %h1, %wv transpose_w = false : tensor<8x32x64xf32>, tensor<64x64xf32>
  // [B, T, D] -> [B, T, H, dh] -> [B, H, T, dh]
  %q4 = amp.reshape %q : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
  %k4 = amp.reshape %k : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
  %v4 = amp.reshape %v : tensor<8x32x64xf32> -> tensor<8x32x4x16xf32>
  %qh = amp.transpose %q4 permutation = [0, 2, 1, 3] : tensor<8x32x4x16xf32>
  %kh = amp.transpose %k4 permutation = [0, 2, 1, 3] : tensor<8x32x4x16xf32>
  %vh = amp.transpose %v4 permutation = [0, 2, 1, 3] : tensor<8x32x4x16xf32>
  // Scores q.k^T / sqrt(dh), dh = 16.
  %scores = amp.matmul %qh, %kh transpose_b : tensor<8x4x32x16xf32>, tensor<8x4x32x16xf32>
  %inv_sqrt_dh = amp.constant dense<0.25> : tensor<f32>
  %scaled = amp.mul %scores, %inv_sqrt_dh : tensor<8x4x32x32xf32>, tensor<f32>
  // Causal mask: query i sees key j iff j <= i (iota compare), else a large negative score.
  %key_pos = amp.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]> : tensor<32xf32>
  %query_pos = amp.constant dense<[[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0], [8.0], [9.0], [10.0], [11.0], [12.0], [13.0], [14.0], [15.0], [16.0], [17.0], [18.0], [19.0], [20.0], [21.0], [22.0], [23.0], [24.0], [25.0], [26.0], [27.0], [28.0], [29.0], [30.0], [31.0]]> : tensor<32x1xf32>
  %causal = amp.compare le, %key_pos, %query_pos : tensor<32xf32>, tensor<32x1xf32>
  %neg_big = amp.constant dense<-1.0e+09> : tensor<f32>
  %masked = amp.select %causal, %scaled, %neg_big : tensor<32x32xi1>, tensor<8x4x32x32xf32>, tensor<f32>
  %probs = amp.softmax %masked axis = 3 : tensor<8x4x32x32xf32>
  %ctx = amp.matmul %probs, %vh : tensor<8x4x32x32xf32>, tensor<8x4x32x16xf32>
  // [B, H, T, dh] -> [B, T, H, dh] -> [B, T, D]
  %ctx_t = amp.transpose %ctx permutation = [0, 2, 1, 3] : tensor<8x4x32x16xf32>
  %ctx_m = amp.reshape %ctx_t : tensor<8x32x4x16xf32> -> tensor<8x32x64xf32>
  %attn = amp.linear %ctx_m, %wo, %bo transpose_w = false : tensor<8x32x64xf32>, tensor<64x64xf32>, tensor<64xf32>
  %x1 = amp.add %x0, %attn : tensor<8x32x64xf32>, tensor<8x32x64xf32>

  // --- MLP with GELU (tanh approximation), pre-norm ---
  %h2 = amp.layer_norm %x1 weight(%ln2_w : tensor<64xf32>) bias(%ln2_b : tensor<64xf32>) : tensor<8x32x64xf32>
  %f1 = amp.linear %h2, %w1, %b1 transpose_w = false : tensor<8x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
  %g = amp.gelu %f1 approximate = tanh : tensor<8x32x256xf32>
  %f2 = amp.linear %g, %w2, %b2 transpose_w = false : tensor<8x32x256xf32>, tensor<256x64xf32>, tensor<64xf32>
  %x2 = amp.add %x1, %f2 : tensor<8x32x64xf32>, tensor<8x32x64xf32>

  // --- Final norm, logits over the vocabulary, next-token loss ---
  %hf = amp.layer_norm %x2 weight(%lnf_w : tensor<64xf32>) bias(%lnf_b : tensor<64xf32>) : tensor<8x32x64xf32>
  %logits3 = amp.linear %hf, %w_lm transpose_w = false : tensor<8x32x64xf32>, tensor<64x64xf32>
  %logits = amp.reshape %logits3 : tensor<8x32x64xf32> -> tensor<256x64xf32>
  %loss = amp.cross_entropy %logits, %labels : tensor<256x64xf32>, tensor<256xi64>
  return %loss, %logits : tensor<f32>, tensor<256x64xf32>
}
