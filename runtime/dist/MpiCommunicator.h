// The MPI implementation of Communicator (MpiCommunicator.cpp, built only with AMP_HAVE_MPI).
// This header has no MPI types, so its users need no MPI include path.
#ifndef AMP_RUNTIME_DIST_MPICOMMUNICATOR_H
#define AMP_RUNTIME_DIST_MPICOMMUNICATOR_H

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "runtime/dist/Communicator.h"

namespace amp::rt {

// MPI_Init_thread(FUNNELED) and a duplicate of MPI_COMM_WORLD; the returned communicator's
// destructor calls MPI_Finalize. makeCommunicator() is its only production caller.
absl::StatusOr<std::unique_ptr<Communicator>> makeMpiCommunicator(double timeoutSeconds);

// MPI counts are int, so a collective over a larger buffer is split into calls of at most this
// many bytes (default 2^30). Tests lower it to exercise the chunking on small buffers; every
// rank must use the same value.
int64_t maxBytesPerMpiCall();
void setMaxBytesPerMpiCall(int64_t bytes);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DIST_MPICOMMUNICATOR_H
