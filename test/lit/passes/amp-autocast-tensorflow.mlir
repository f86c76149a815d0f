// amp-autocast with the TensorFlow policy: grappler's allow/infer/deny/clear painting
// (auto_mixed_precision.cc) with the fp16 lists and the oneDNN bf16 lists, and worked examples. The PyTorch policy, overrides and policy files: amp-autocast.mlir.
//
// RUN: amp-opt --split-input-file --amp-autocast="dtype=f16 policy=tensorflow" %s | FileCheck %s --check-prefixes=CHECK,F16
// RUN: amp-opt --split-input-file --amp-autocast="dtype=bf16 policy=tensorflow" %s | FileCheck %s --check-prefixes=CHECK,BF16
// The explicit list names select the same tables.
// RUN: amp-opt --split-input-file --amp-autocast="dtype=f16 policy=tensorflow-fp16" %s | FileCheck %s --check-prefixes=CHECK,F16
//
// A policy file based on tensorflow: rsqrt made clear, reductions made infer, a location
// pattern forced to f32 and exp switched off (runs as declared).
// RUN: amp-opt --amp-autocast="dtype=f16 policy=%S/Inputs/policy-overrides.json" %S/Inputs/tf-policy-model.mlir | FileCheck %s --check-prefix=FILE

// 3.8 vector 1: MatMul -> Relu -> MatMul. Relu is clear and lies between two allow ops, so the
// chain runs in f16 with no casts inside it.
// CHECK-LABEL: func.func @vector_matmul_relu_matmul
// CHECK-COUNT-2: amp.cast %arg{{[01]}} {amp.autocast_inserted} : tensor<{{.*}}xf32> to tensor<{{.*}}x[[LOW:b?f16]]>
// CHECK: %[[A:.*]] = amp.matmul {{.*}}amp.reason = #amp.reason<policy, policy = "tensorflow", category = "allow", detail = "allow-list op; runs in [[LOW]]">
// CHECK-NEXT: %[[R:.*]] = amp.relu %[[A]] {amp.precision = "[[LOW]]", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", rule = "painted allow", detail = "between allow ops 'amp.matmul' {{.*}} and 'amp.matmul' {{.*}}">}
// CHECK-NEXT: %[[B:.*]] = amp.matmul %[[R]], {{.*}} : tensor<4x8x[[LOW]]>, tensor<8x8x[[LOW]]>
// CHECK-NEXT: %[[OUT:.*]] = amp.cast %[[B]] {amp.autocast_inserted} : tensor<4x8x[[LOW]]> to tensor<4x8xf32>
// CHECK-NEXT: return %[[OUT]]
func.func @vector_matmul_relu_matmul(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.relu %0 : tensor<4x8xf32>
  %2 = amp.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// 3.8 vector 2: MatMul -> Exp -> Add -> MatMul. Deny spreads forward from Exp into Add (a
// deny -> infer path includes its end), so both run in f32.
// CHECK-LABEL: func.func @vector_matmul_exp_add_matmul
// CHECK: %[[A:.*]] = amp.matmul {{.*}} : tensor<4x8x[[LOW:b?f16]]>, tensor<8x8x[[LOW]]>
// CHECK-NEXT: %[[UP:.*]] = amp.cast %[[A]] {amp.autocast_inserted} : tensor<4x8x[[LOW]]> to tensor<4x8xf32>
// CHECK-NEXT: %[[E:.*]] = amp.exp %[[UP]] {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "deny", detail = "deny-list op; runs in f32">}
// CHECK-NEXT: %[[ADD:.*]] = amp.add %[[E]], %arg2 {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", rule = "painted deny", detail = "downstream of deny op 'amp.exp' at {{.*}} on a path to an infer/deny op; runs in f32">}
// CHECK-NEXT: %[[DOWN:.*]] = amp.cast %[[ADD]] {amp.autocast_inserted} : tensor<4x8xf32> to tensor<4x8x[[LOW]]>
// CHECK-NEXT: = amp.matmul %[[DOWN]]
func.func @vector_matmul_exp_add_matmul(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.exp %0 : tensor<4x8xf32>
  %2 = amp.add %1, %b : tensor<4x8xf32>, tensor<8xf32>
  %3 = amp.matmul %2, %w : tensor<4x8xf32>, tensor<8x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// 3.8 vector 3: Exp -> Relu -> MatMul. Nothing after Relu is infer or deny, so deny does not
// reach it; allow spreads back from MatMul through the clear Relu.
// CHECK-LABEL: func.func @vector_exp_relu_matmul
// CHECK-NEXT: %[[E:.*]] = amp.exp %arg0 {amp.precision = "f32"
// CHECK-NEXT: %[[C:.*]] = amp.cast %[[E]] {amp.autocast_inserted} : tensor<4x8xf32> to tensor<4x8x[[LOW:b?f16]]>
// CHECK-NEXT: amp.relu %[[C]] {amp.precision = "[[LOW]]", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", rule = "painted allow", detail = "connected through clear ops to allow op 'amp.matmul' {{.*}}">}
func.func @vector_exp_relu_matmul(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.exp %x : tensor<4x8xf32>
  %1 = amp.relu %0 : tensor<4x8xf32>
  %2 = amp.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// 3.8 vector 4: MatMul -> Add (infer) -> Sum. fp16: Add has no allow op downstream and stays
// f32. bf16 (Sum is infer there): Add follows its allow input, and so does Sum.
// CHECK-LABEL: func.func @vector_matmul_add_sum
// F16: %[[A:.*]] = amp.matmul {{.*}} : tensor<4x8xf16>, tensor<8x8xf16>
// F16-NEXT: %[[UP:.*]] = amp.cast %[[A]] {amp.autocast_inserted} : tensor<4x8xf16> to tensor<4x8xf32>
// F16-NEXT: %[[ADD:.*]] = amp.add %[[UP]], %arg2 {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", detail = "not between allow ops, stays f32">}
// F16-NEXT: amp.reduce_sum %[[ADD]] dims = [1] {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "deny", detail = "deny-list op; runs in f32">}
// BF16: %[[A:.*]] = amp.matmul {{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16>
// BF16-NEXT: %[[B:.*]] = amp.cast %arg2 {amp.autocast_inserted} : tensor<8xf32> to tensor<8xbf16>
// BF16-NEXT: %[[ADD:.*]] = amp.add %[[A]], %[[B]] {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", rule = "painted allow", detail = "bf16 mode: an input comes from allow op 'amp.matmul' {{.*}} and none from a deny op; runs in bf16">}
// BF16-NEXT: %[[S:.*]] = amp.reduce_sum %[[ADD]] dims = [1] {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", rule = "painted allow", detail = "bf16 mode: {{.*}}">}
// BF16-NEXT: amp.cast %[[S]] {amp.autocast_inserted} : tensor<4xbf16> to tensor<4xf32>
func.func @vector_matmul_add_sum(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.add %0, %b : tensor<4x8xf32>, tensor<8xf32>
  %2 = amp.reduce_sum %1 dims = [1] : tensor<4x8xf32>
  return %2 : tensor<4xf32>
}

// -----

// 3.5 step 2: deny -> infer -> clear -> infer -> clear -> allow -> infer. Deny paints the path
// up to the last infer op; the trailing clear op joins allow through step 6; the infer op after
// the allow op stays f32 with the fp16 lists (step 5 paints it in bf16 mode).
// CHECK-LABEL: func.func @deny_propagation
// CHECK-NEXT: amp.exp {{.*}}amp.reason = #amp.reason<policy, policy = "tensorflow", category = "deny", detail = "deny-list op
// CHECK-NEXT: amp.log {{.*}}amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", rule = "painted deny", detail = "downstream of deny op 'amp.exp'
// CHECK-NEXT: amp.relu {{.*}}amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", rule = "painted deny", detail = "downstream of deny op 'amp.exp'
// CHECK-NEXT: amp.tanh {{.*}}amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", rule = "painted deny", detail = "downstream of deny op 'amp.exp'
// CHECK-NEXT: amp.cast {{.*}} : tensor<4x8xf32> to tensor<4x8x[[LOW:b?f16]]>
// CHECK-NEXT: amp.neg {{.*}}amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", rule = "painted allow", detail = "connected through clear ops to allow op 'amp.matmul'
// CHECK: = amp.matmul
// F16-NEXT: amp.cast {{.*}} : tensor<4x8xf16> to tensor<4x8xf32>
// F16-NEXT: amp.sigmoid {{.*}}{amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", detail = "not between allow ops, stays f32">}
// BF16-NEXT: amp.sigmoid {{.*}}{amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", rule = "painted allow", detail = "bf16 mode
func.func @deny_propagation(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.exp %x : tensor<4x8xf32>
  %1 = amp.log %0 : tensor<4x8xf32>
  %2 = amp.relu %1 : tensor<4x8xf32>
  %3 = amp.tanh %2 : tensor<4x8xf32>
  %4 = amp.neg %3 : tensor<4x8xf32>
  %5 = amp.matmul %4, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %6 = amp.sigmoid %5 : tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// -----

// Step 6 in both directions: clear ops before and after an allow op join it (reshape of an
// argument, transpose of the result); a clear op that trails off after a deny op stays f32.
// CHECK-LABEL: func.func @allow_through_clear
// CHECK-NEXT: %[[X:.*]] = amp.cast %arg0 {amp.autocast_inserted} : tensor<32xf32> to tensor<32x[[LOW:b?f16]]>
// CHECK-NEXT: %[[R:.*]] = amp.reshape %[[X]] {amp.precision = "[[LOW]]", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", rule = "painted allow", detail = "connected through clear ops to allow op 'amp.matmul'
// CHECK: %[[T:.*]] = amp.transpose {{.*}} {amp.precision = "[[LOW]]", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", rule = "painted allow", detail = "
// CHECK: amp.exp
// CHECK-NEXT: %[[ABS:.*]] = amp.abs {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", detail = "not connected to an allow op, stays f32">}
// CHECK-NEXT: %[[TO:.*]] = amp.cast %[[T]] {amp.autocast_inserted} : tensor<8x4x[[LOW]]> to tensor<8x4xf32>
// CHECK-NEXT: return %[[TO]], %[[ABS]]
func.func @allow_through_clear(%x: tensor<32xf32>, %w: tensor<8x8xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>) {
  %0 = amp.reshape %x : tensor<32xf32> -> tensor<4x8xf32>
  %1 = amp.matmul %0, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %2 = amp.transpose %1 permutation = [1, 0] : tensor<4x8xf32>
  %3 = amp.exp %0 : tensor<4x8xf32>
  %4 = amp.abs %3 : tensor<4x8xf32>
  return %2, %4 : tensor<8x4xf32>, tensor<4x8xf32>
}

// -----

// No allow op: nothing is painted, every op stays f32 and no cast is inserted.
// CHECK-LABEL: func.func @no_allow
// CHECK-NOT: amp.cast
// CHECK: amp.relu %arg0 {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", detail = "no allow op in the function, nothing is painted; stays f32">}
// CHECK-NOT: amp.cast
// CHECK: return
func.func @no_allow(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.relu %x : tensor<4x8xf32>
  %1 = amp.tanh %0 : tensor<4x8xf32>
  %2 = amp.softmax %1 axis = 1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// Unlisted (fp16 lists): rsqrt is on no list, never painted, and blocks the fill between the two
// matmuls. With the bf16 lists rsqrt is infer: it lies between allow ops and runs in bf16.
// CHECK-LABEL: func.func @unlisted
// F16: amp.rsqrt {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "unlisted", detail = "on no list, never painted, stays f32">} : tensor<4x8xf32>
// F16-COUNT-2: amp.cast
// BF16: amp.rsqrt {{.*}} {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", rule = "painted allow", detail = "between allow ops
// BF16-NEXT: = amp.matmul
// BF16-NEXT: amp.cast
// BF16-NEXT: return
func.func @unlisted(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.rsqrt %0 : tensor<4x8xf32>
  %2 = amp.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// Step 9, cast absorption: an explicit cast to f32 whose consumers all run low casts to low
// instead (here it becomes an identity cast, which amp-cast-cleanup removes). A value the user
// already typed as f16 is not processed.
// CHECK-LABEL: func.func @cast_absorption
// F16-NEXT: %[[C:.*]] = amp.cast %arg0 {amp.reason = #amp.reason<policy, policy = "tensorflow", rule = "explicit cast absorbed", detail = "all its consumers run in f16, so it casts to f16">} : tensor<4x8xf16> to tensor<4x8xf16>
// BF16-NEXT: %[[C:.*]] = amp.cast %arg0 {amp.reason = #amp.reason<policy, policy = "tensorflow", rule = "explicit cast absorbed", detail = "{{.*}}">} : tensor<4x8xf16> to tensor<4x8xbf16>
// CHECK: = amp.matmul %[[C]]
// CHECK: amp.neg %arg0 {amp.precision = "f16", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", detail = "its values are not f32 in the input (user-typed), runs as declared">} : tensor<4x8xf16>
func.func @cast_absorption(%x: tensor<4x8xf16>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.cast %x : tensor<4x8xf16> to tensor<4x8xf32>
  %1 = amp.matmul %0, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %2 = amp.neg %x : tensor<4x8xf16>
  %3 = amp.cast %2 : tensor<4x8xf16> to tensor<4x8xf32>
  %4 = amp.add %1, %3 : tensor<4x8xf32>, tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// Overrides: a clear op forced to f32 acts as a deny op; a deny-list op forced to the low dtype
// seeds allow paint; amp.autocast = false leaves an op as declared.
// CHECK-LABEL: func.func @overrides
// CHECK: amp.relu {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<override, detail = "amp.precision = \22f32\22 on the op; runs in f32">} : tensor<4x8xf32>
// CHECK: = amp.matmul
// BF16-NEXT: amp.cast {{.*}} : tensor<4x8xbf16> to tensor<4x8xf16>
// CHECK-NEXT: %[[E:.*]] = amp.exp {{.*}} {amp.precision = "f16", amp.reason = #amp.reason<override, detail = "amp.precision = \22f16\22 on the op; runs in f16">} : tensor<4x8xf16>
// CHECK-NEXT: %[[EUP:.*]] = amp.cast %[[E]] {amp.autocast_inserted} : tensor<4x8xf16> to tensor<4x8xf32>
// CHECK-NEXT: amp.neg %[[EUP]] {amp.autocast = false, amp.precision = "f32", amp.reason = #amp.reason<override, detail = "amp.autocast = false on the op; runs as declared">}
func.func @overrides(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %1 = amp.relu %0 {amp.precision = "f32"} : tensor<4x8xf32>
  %2 = amp.matmul %1, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %3 = amp.exp %2 {amp.precision = "f16"} : tensor<4x8xf32>
  %4 = amp.neg %3 {amp.autocast = false} : tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// FILE: module attributes {amp.precision = "f16", amp.reason = #amp.reason<pass, rule = "autocast", detail = "policy policy-overrides.json (based on tensorflow-fp16), dtype=f16">}
// FILE: amp.rsqrt {{.*}} {amp.precision = "f16", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "clear", rule = "painted allow", detail = "between allow ops 'amp.matmul' at body.fc1 and 'amp.matmul' at body.fc2; runs in f16">}
// FILE: amp.reduce_sum {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", detail = "not between allow ops, stays f32">}
// FILE: amp.exp {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<override, detail = "op 'amp.exp' -> off (policy-overrides.json overrides[1]); runs as declared">}
// FILE: amp.matmul {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<override, detail = "loc 'head.*' -> f32 (policy-overrides.json overrides[0]); runs in f32">} : tensor<4x8xf32>, tensor<8x8xf32>
