// bench_ledger: the host time the library spends on an op around its kernels, on both backends.
// For a Gaussian's accesses (read with a z halo, write, a scratch volume written) on float
// volumes of --shape (default 512x512x300), on sets of 1 and 32 streams:
//   plan_us    stream_set::plan(exec::work_of(...)): the slab policy;
//   run_op_us  exec::run_op on that plan with an enqueue that launches nothing: the ledger's
//              waits, its event records and updates. Marks are deferred (exec::defer_mark): in
//              this chain of ops on the same volumes and slabs each op's ledger updates replace
//              every mark of the one before, so run_op drops them unrecorded;
//   records_per_op  native event records per run_op (stream_state::records), the synchronize
//              between batches included (it records none);
// each the median over 15 batches of 2000 calls (CUDA: the set is synchronized between batches,
// so that completed events are recycled, and the records do not pile up). On the host backend
// this is the library's bookkeeping alone; on CUDA the difference to an op's host_us in
// `bench_ops` is what its launches cost.
//   RESULT ledger backend=<cuda|host> streams=N slabs=K plan_us=.. run_op_us=.. records_per_op=..
// Usage: bench_ledger [--shape XxYxZ]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <voxstream/voxstream.hpp>

namespace {

using clock_type = std::chrono::steady_clock;

template <class F>
double median_us(vox::stream_set& set, F&& f) {
  constexpr int batches = 15, calls = 2000;
  for (int i = 0; i < 200; ++i) f();
  set.synchronize();
  std::vector<double> per_call;
  for (int b = 0; b < batches; ++b) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < calls; ++i) f();
    const auto t1 = clock_type::now();
    per_call.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    set.synchronize();
  }
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

vox::extent3 parse_shape(const std::string& s) {
  unsigned long x = 0, y = 0, z = 0;
  if (std::sscanf(s.c_str(), "%lux%lux%lu", &x, &y, &z) != 3 || x == 0 || y == 0 || z == 0) {
    std::fprintf(stderr, "bench_ledger: --shape wants XxYxZ, got %s\n", s.c_str());
    std::exit(2);
  }
  return vox::extent3{x, y, z};
}

}  // namespace

int main(int argc, char** argv) {
  vox::extent3 e{512, 512, 300};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shape" && i + 1 < argc) e = parse_shape(argv[++i]);
  }
  const char* backend = VOX_BACKEND_CUDA ? "cuda" : "host";
  std::printf("bench_ledger: %s backend, float volumes %s\n", backend, e.str().c_str());
  for (std::size_t n : {std::size_t{1}, std::size_t{32}}) {
    vox::stream_set set(n);
    vox::volume<float> in(set, e), out(set, e), scratch(set, e);
    set.synchronize();
    const std::size_t halo = std::min<std::size_t>(8, e.z);
    auto plan = [&] {
      return set.plan(
          vox::exec::work_of({vox::read(in, halo), vox::write(out)}, "gaussian", 4.0, 64));
    };
    const double plan_us = median_us(set, [&] {
      const auto p = plan();
      if (p.empty()) std::abort();
    });
    const std::vector<vox::slab> p = plan();
    // The states, taken once (state(i) records a pending mark: not inside the count).
    std::vector<std::shared_ptr<vox::exec::stream_state>> states;
    for (std::size_t i = 0; i < set.size(); ++i) states.push_back(set.state(i));
    auto records = [&] {
      std::uint64_t r = 0;
      for (const auto& st : states) r += st->records.load();
      return r;
    };
    std::uint64_t ops = 0;
    const std::uint64_t records0 = records();
    const double run_us = median_us(set, [&] {
      vox::exec::run_op(set, "gaussian", p,
                        {vox::read(in, halo), vox::write(out), vox::write(scratch)},
                        [](vox::stream_view, const vox::slab&) {});
      ++ops;
    });
    const double per_op = static_cast<double>(records() - records0) / static_cast<double>(ops);
    std::printf("RESULT ledger backend=%s streams=%zu slabs=%zu plan_us=%.3f run_op_us=%.3f "
                "records_per_op=%.3f\n",
                backend, n, p.size(), plan_us, run_us, per_op);
  }
  return 0;
}
