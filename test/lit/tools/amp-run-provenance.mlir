// Native code only from bundles the user's ampc authenticated (docs/kernels.md, threat model).
// ampc creates the key on first use (mode 0600) and seals the bundle; amp-run under that key runs
// the native kernels silently; under another key, or with none, it says once why it interprets,
// names the flags, and gives the same bits; --trust-native-code runs the native kernels again.

// RUN: rm -rf %t && mkdir -p %t
// RUN: env AMP_KEY_FILE=%t/key ampc %amp_src_root/examples/mlp.mlir --train --precision=bf16 -o %t/mlp.ampx
// RUN: stat -c %%a %t/key | FileCheck %s --check-prefix=MODE
// MODE: 600
// RUN: env AMP_KEY_FILE=%t/key amp-run %t/mlp.ampx --entry=train_step --data=fashion-mnist --output=%t/native.st 2>&1 | FileCheck %s --check-prefix=NATIVE
// NATIVE-NOT: not loaded
// NATIVE: loss = 2.4

// RUN: printf '%%064d\n' 1 > %t/other.key && chmod 600 %t/other.key
// RUN: env AMP_KEY_FILE=%t/other.key amp-run %t/mlp.ampx --entry=train_step --data=fashion-mnist --output=%t/other.st 2>&1 | FileCheck %s --check-prefix=OTHER
// OTHER: its native kernels are not loaded, because its tag does not verify under the key {{.*}}other.key
// OTHER-SAME: Pass --trust-native-code if you trust where it came from, or --native-code=off to silence this
// OTHER-NOT: not loaded
// RUN: cmp %t/native.st %t/other.st

// RUN: env AMP_KEY_FILE=%t/missing.key amp-run %t/mlp.ampx --entry=train_step --data=fashion-mnist --output=%t/nokey.st 2>&1 | FileCheck %s --check-prefix=NOKEY
// NOKEY: there is no ampc key to check its tag with
// RUN: cmp %t/native.st %t/nokey.st

// RUN: env AMP_KEY_FILE=%t/other.key amp-run %t/mlp.ampx --trust-native-code --entry=train_step --data=fashion-mnist --output=%t/trust.st 2>&1 | FileCheck %s --check-prefix=TRUST
// RUN: env AMP_KEY_FILE=%t/key amp-run %t/mlp.ampx --native-code=off --entry=train_step --data=fashion-mnist --output=%t/off.st 2>&1 | FileCheck %s --check-prefix=TRUST
// TRUST-NOT: not loaded
// TRUST: loss = 2.4
// RUN: cmp %t/native.st %t/trust.st
// RUN: cmp %t/native.st %t/off.st

// A changed byte of the plan: the tag no longer verifies.
// RUN: python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); i=b.find(b'mlp.mlir'); b[i]=ord('M'); open(p,'wb').write(b)" %t/mlp.ampx
// RUN: env AMP_KEY_FILE=%t/key amp-run %t/mlp.ampx --entry=train_step --data=fashion-mnist 2>&1 | FileCheck %s --check-prefix=EDITED
// EDITED: its tag does not verify under the key

// RUN: not amp-run %t/mlp.ampx --trust-native-code --native-code=off 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: --trust-native-code and --native-code=off contradict each other

// A FIFO at the key's path is refused at once, by ampc and by amp-run: both used to
// block forever in open(). ampc still writes the bundle, unauthenticated; amp-run interprets it.
// RUN: rm -f %t/fifo.key && mkfifo %t/fifo.key
// RUN: env AMP_KEY_FILE=%t/fifo.key ampc %amp_src_root/examples/mlp.mlir --train -o %t/fifo.ampx 2>&1 | FileCheck %s --check-prefix=KEYFIFO-C
// KEYFIFO-C: ampc: warning: {{.*}}fifo.ampx is not authenticated: the ampc key {{.*}}fifo.key is not a regular file
// RUN: env AMP_KEY_FILE=%t/fifo.key amp-run %t/mlp.ampx --entry=train_step --data=fashion-mnist 2>&1 | FileCheck %s --check-prefix=KEYFIFO-R
// KEYFIFO-R: its native kernels are not loaded, because the ampc key {{.*}}fifo.key is not a regular file
// A FIFO given as the bundle is refused, not waited on.
// RUN: not amp-run %t/fifo.key 2>&1 | FileCheck %s --check-prefix=BUNDLEFIFO
// BUNDLEFIFO: fifo.key: not a regular file
