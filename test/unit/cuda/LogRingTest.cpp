// The pinned-memory logging ring (runtime/devices/cuda/LogRing.h) against a simulated stream
// that completes steps some time after the host enqueues them: every step is delivered once, in
// order, with its own values, and the host waits only when it runs a whole ring ahead.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/LogRing.h"

namespace amp::rt::cuda {
namespace {

// A slot's log, as a device would write it.
struct LoggedScalars {
  float loss = 0.0f;
  float scale = 0.0f;
  float foundInf = 0.0f;
  int32_t pad = 0;
};
struct LoggedStep {
  int64_t step = 0;
  LoggedScalars scalars;
};

// A stream that lands slot copies in order, `lag` host steps after they were enqueued.
struct SimulatedStream {
  std::vector<LoggedScalars>* pinned;
  std::vector<int64_t>* stepInSlot;  // what the device has written into each slot
  std::vector<int64_t> queue;        // steps enqueued, not landed
  std::vector<LoggedScalars> values;
  int64_t landedThrough = -1;
  void land(int64_t step) {
    for (int64_t s = landedThrough + 1; s <= step; ++s) {
      const int slot = static_cast<int>(s % pinned->size());
      (*pinned)[slot] = values[s];
      (*stepInSlot)[slot] = s;
    }
    if (step > landedThrough) landedThrough = step;
  }
};

struct Events {
  SimulatedStream* stream;
  int64_t* waits;
  bool done(int slot) const {
    for (int64_t s = stream->landedThrough + 1; s < static_cast<int64_t>(stream->values.size()); ++s)
      if (s % static_cast<int64_t>(stream->pinned->size()) == slot) return false;
    return true;
  }
  void wait(int slot) const {
    ++*waits;
    for (int64_t s = static_cast<int64_t>(stream->values.size()) - 1; s > stream->landedThrough; --s)
      if (s % static_cast<int64_t>(stream->pinned->size()) == slot) {
        stream->land(s);
        return;
      }
  }
};

void run(int depth, int lag, int steps, int64_t& hostWaits, std::vector<LoggedStep>& delivered) {
  std::vector<LoggedScalars> pinned(depth);
  std::vector<int64_t> written(depth, -1);
  SimulatedStream stream{&pinned, &written, {}, {}, -1};
  int64_t waits = 0;
  LogRing<Events> ring(depth, reinterpret_cast<const uint8_t*>(pinned.data()), sizeof(LoggedScalars),
                       Events{&stream, &waits});
  auto deliver = [&](int64_t ticket, absl::Span<const uint8_t> bytes) {
    ASSERT_EQ(bytes.size(), sizeof(LoggedScalars));
    LoggedStep s{ticket, {}};
    std::memcpy(&s.scalars, bytes.data(), sizeof s.scalars);
    delivered.push_back(s);
  };
  for (int64_t step = 0; step < steps; ++step) {
    ring.poll(deliver);
    const int slot = ring.claim(deliver);
    EXPECT_EQ(slot, step % depth);
    LoggedScalars v;
    v.loss = static_cast<float>(step) + 0.5f;
    v.scale = 65536.0f;
    v.foundInf = step % 5 == 0 ? 1.0f : 0.0f;
    stream.values.push_back(v);
    ring.filled(slot, step);
    stream.land(step - lag);  // the GPU is `lag` steps behind
  }
  ring.drain(deliver);
  EXPECT_EQ(ring.pending(), 0);
  EXPECT_LE(ring.hostWaits(), waits) << "the ring counts its own waits, not the final drain's";
  hostWaits = ring.hostWaits();
}

void expectAllInOrder(const std::vector<LoggedStep>& delivered, int steps) {
  ASSERT_EQ(static_cast<int>(delivered.size()), steps);
  for (int s = 0; s < steps; ++s) {
    EXPECT_EQ(delivered[s].step, s);
    EXPECT_EQ(delivered[s].scalars.loss, static_cast<float>(s) + 0.5f);
    EXPECT_EQ(delivered[s].scalars.foundInf, s % 5 == 0 ? 1.0f : 0.0f);
  }
}

TEST(CudaLogRing, SteadyStateNeverWaits) {
  // The GPU one step behind the host, a ring of 4: logs arrive a step late, nobody waits.
  int64_t waits = 0;
  std::vector<LoggedStep> delivered;
  run(4, 1, 100, waits, delivered);
  EXPECT_EQ(waits, 0) << "no step waited for a slot";
  expectAllInOrder(delivered, 100);
}

TEST(CudaLogRing, AHostAWholeRingAheadWaitsForTheOldestSlot) {
  // The GPU 6 steps behind a ring of 4: every claim finds its slot unread and waits.
  int64_t waits = 0;
  std::vector<LoggedStep> delivered;
  run(4, 6, 40, waits, delivered);
  EXPECT_GE(waits, 36);
  expectAllInOrder(delivered, 40);
}

TEST(CudaLogRing, ADepthOfOneStillDeliversEverything) {
  int64_t waits = 0;
  std::vector<LoggedStep> delivered;
  run(1, 0, 10, waits, delivered);
  expectAllInOrder(delivered, 10);
}

}  // namespace
}  // namespace amp::rt::cuda
