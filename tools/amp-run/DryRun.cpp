#include "tools/amp-run/DryRun.h"

#include <cstdio>
#include <map>

#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/exec/Session.h"
#include "tools/amp-run/ProfileReport.h"

using namespace amp::rt;

int dryRunCuda(Plan plan, int64_t memoryLimit, bool profile, const cuda::CudaOptions& options) {
  auto owned = std::make_unique<cuda::DryRunApi>();
  cuda::DryRunApi* api = owned.get();
  std::vector<std::string> entries;
  for (const EntryPoint& e : plan.entries) entries.push_back(e.name);
  auto session = Session::create(std::move(plan), cuda::makeCudaExecutor(std::move(owned), options), memoryLimit);
  if (!session.ok()) {
    std::fprintf(stderr, "amp-run: %s\n", std::string(session.status().message()).c_str());
    return 1;
  }
  // Zero-filled inputs and labels: class 0 is a valid label, and nothing runs anyway.
  std::map<std::string, Tensor> feeds;
  for (const BufferDesc& b : session->plan().buffers)
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Label) feeds.emplace(b.name, Tensor(b.dtype, b.shape));
  std::printf("cuda dry run on %s\n", session->executor().description().c_str());
  std::fflush(stdout);  // before any error on stderr
  int status = 0;
  for (const std::string& name : entries) {
    auto prepared = session->prepared(name);
    if (!prepared.ok()) {
      std::fprintf(stderr, "amp-run: %s\n", std::string(prepared.status().message()).c_str());
      status = 1;
      continue;
    }
    const EntryReport* r = &(**prepared).report();
    api->clearCalls();
    auto first = session->run(name, feeds);
    const int64_t syncsBefore = api->hostSyncs();
    const int64_t launchesBefore = api->graphLaunches();
    auto second = first.ok() ? session->run(name, feeds) : first;
    if (!second.ok()) {
      std::fprintf(stderr, "amp-run: entry '%s': %s\n", name.c_str(), std::string(second.status().message()).c_str());
      status = 1;
      continue;
    }
    // --debug-sync runs the operations one by one, each followed by a wait, and captures no graph.
    const char* how = options.syncEachLaunch ? "run one by one, each waited for" : "in one graph";
    std::printf("\nentry %s: %zu operations %s (%s); arena %lld bytes, scratch %lld bytes; code %s\n", name.c_str(),
                r->actions.size(), how, r->countsText().c_str(), static_cast<long long>(r->arenaBytes),
                static_cast<long long>(r->scratchBytes), r->code.c_str());
    for (size_t i = 0; i < r->actions.size(); ++i) std::printf("  %4zu  %s\n", i + 1, r->actions[i].c_str());
    std::printf("steady state: %lld graph launch(es) and %lld host synchronisation(s) per call (the results' copy)\n",
                static_cast<long long>(api->graphLaunches() - launchesBefore),
                static_cast<long long>(api->hostSyncs() - syncsBefore));
    // As the trainer runs it: enqueued calls whose scalar logs are read later, without a wait.
    constexpr int64_t kCalls = 8;
    const int64_t asyncSyncs = api->hostSyncs(), asyncLaunches = api->graphLaunches();
    int64_t delivered = 0;
    absl::Status async;
    for (int64_t t = 0; t < kCalls && async.ok(); ++t) {
      async = session->enqueue(name, feeds, {}, t);
      if (async.ok()) async = session->poll(name, false, [&](const LoggedCall&) { ++delivered; });
    }
    const int64_t steadySyncs = api->hostSyncs() - asyncSyncs;
    if (async.ok()) async = session->poll(name, true, [&](const LoggedCall&) { ++delivered; });
    if (!async.ok()) {
      std::fprintf(stderr, "amp-run: entry '%s': %s\n", name.c_str(), std::string(async.message()).c_str());
      status = 1;
      continue;
    }
    std::printf("enqueued (as training runs it): %lld graph launch(es) and %lld host synchronisation(s) per call; "
                "%lld of %lld scalar logs delivered\n",
                static_cast<long long>((api->graphLaunches() - asyncLaunches) / kCalls),
                static_cast<long long>(steadySyncs / kCalls), static_cast<long long>(delivered),
                static_cast<long long>(kCalls));
    if (profile && name == "train_step") {
      auto p = session->profile(name, feeds, {}, 2);
      if (!p.ok()) {
        std::fprintf(stderr, "amp-run: entry '%s': %s\n", name.c_str(), std::string(p.status().message()).c_str());
        status = 1;
        continue;
      }
      printProfile(name, *p, false);
    }
  }
  // What a GPU must hold for this bundle: params and state, and every entry's arena and scratch.
  const double mib = 1024.0 * 1024.0;
  std::printf("\nGPU memory with every entry prepared: %.1f MiB (params and state %.1f MiB), of the %s's %.1f MiB\n",
              static_cast<double>(api->deviceBytesInUse()) / mib, static_cast<double>(session->persistentBytes()) / mib,
              "H200", static_cast<double>(api->info().memoryBytes) / mib);
  return status;
}
