// bench_ops --sets (issue 17): every case of the families on stream_sets of several sizes, side by
// side, on the same inputs; see main.cu's usage for the options and the output lines.
//
// Per shape: the inputs (3 random volumes of each type, rotated so that L2 cannot serve them) are
// made once on a loader set and synchronised. Then, for each set size, a stream_set, its own
// outputs and a context are made and every family is registered on it (the cases capture the
// context and its set, and allocate their scratch on it). Cases are timed one at a time, on
// every set in turn, run by run, so that a drift of the device over the run touches both figures
// alike. The user figures (enqueue + synchronize, host wall clock) come from a second set of the
// same size whose raw stream handles nobody takes, as in a program that only calls ops: the event timer
// forks and joins every stream of its set by handle, which makes synchronize() query them. The
// ledger orders the reads of the shared inputs after the loader's (complete) writes; every set
// has its own outputs, so no wait crosses from one timed set to another.
#include "bench_ops.hpp"

#include "../../src/ops/detail/filter_paths.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace voxbench {
namespace {

constexpr double ratio_target = 1.05;
constexpr double host_us_target = 20.0;
constexpr double counted_bytes = 32e6;  // inputs below 32 MB are reported, not counted


double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// As a user times an op: host wall clock of the enqueue and set.synchronize(), one run (the
// set synchronised before it). `user` gets ms, `enqueue` the enqueue part in us.
void user_once(vox::stream_set& set, const std::function<void(int)>& run, int r,
               std::vector<double>& user, std::vector<double>& enqueue) {
  using clock = std::chrono::steady_clock;
  set.synchronize();
  const auto t0 = clock::now();
  run(r);
  const auto t1 = clock::now();
  set.synchronize();
  const auto t2 = clock::now();
  user.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
  enqueue.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
}

// The inputs of one shape, shared by every set.
struct inputs {
  std::vector<vox::volume<float>> f32;
  std::vector<vox::volume<std::uint16_t>> u16;
};

void make_inputs(vox::stream_set& loader, const vox::extent3& e, inputs& in) {
  const int rotate = 3;
  const std::size_t n = e.voxels();
  std::vector<float> hf(n);
  std::vector<std::uint16_t> hu(n);
  for (int k = 0; k < rotate; ++k) {
    const std::uint64_t base = (static_cast<std::uint64_t>(k) + 1) << 40;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t r = mix(base + i);
      hf[i] = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
      hu[i] = static_cast<std::uint16_t>((r >> 20) & 4095u);         // [0, 4096)
    }
    in.f32.emplace_back(loader, e);
    in.u16.emplace_back(loader, e);
    vox::upload(loader, hf.data(), hf.size(), in.f32.back());
    vox::upload(loader, hu.data(), hu.size(), in.u16.back());
  }
  loader.synchronize();
}

// One set size: the set, its timer, its outputs and the context its cases were registered on.
// Members are destroyed in reverse order: the cases (and their scratch) first, the set last.
/// The cases of one set: its outputs and registered families.
struct set_cases {
  std::unique_ptr<vox::stream_set> set;
  std::unique_ptr<vox::volume<float>> f32_out;
  std::unique_ptr<vox::volume<std::uint16_t>> u16_out;
  std::unique_ptr<context> ctx;
};

/// Per set size, two sets: one timed with events (the timer forks and joins every stream by
/// its raw handle) and one timed as a user times it, whose raw handles nobody takes (as in a
/// program that only calls ops and synchronize()).
struct set_run {
  std::size_t size{0};
  std::unique_ptr<vox::stream_set> set;
  std::unique_ptr<timer> t;
  std::unique_ptr<vox::volume<float>> f32_out;
  std::unique_ptr<vox::volume<std::uint16_t>> u16_out;
  std::unique_ptr<context> ctx;
  set_cases user;
};

struct figures {
  double ms{0}, user_ms{0}, host_us{0}, host_us_synced{0};
};

struct worst {
  double value{-1};
  std::string where;
  int missed{0};
  void see(double v, double target, const std::string& w) {
    if (v > value) value = v, where = w;
    if (v > target) ++missed;
  }
};

std::string key_of(std::string name) {
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

}  // namespace

int run_sets(const sets_options& o) {
  std::vector<std::size_t> sizes;
  for (const auto& s : split(o.sets, ",")) {
    const long n = std::atol(s.c_str());
    if (n <= 0) {
      std::fprintf(stderr, "bench_ops: --sets: bad set size '%s'\n", s.c_str());
      return 2;
    }
    sizes.push_back(static_cast<std::size_t>(n));
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<vox::extent3> shapes;
  for (const auto& s : split(o.shapes, ",")) {
    vox::extent3 e;
    if (!parse_shape(s, e)) {
      std::fprintf(stderr, "bench_ops: --shape: bad shape '%s' (XxYxZ or N^3)\n", s.c_str());
      return 2;
    }
    shapes.push_back(e);
  }
  if (sizes.empty() || shapes.empty()) {
    std::fprintf(stderr, "bench_ops: --sets needs at least one set size and one shape\n");
    return 2;
  }
  const bool compare = sizes.size() >= 2;
  const std::size_t lo = sizes.front(), hi = sizes.back();
  const int reps = std::max(20, o.reps);

  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  std::string size_list, shape_list;
  for (auto n : sizes) size_list += (size_list.empty() ? "" : ",") + std::to_string(n);
  for (const auto& e : shapes) shape_list += (shape_list.empty() ? "" : ",") + shape_name(e);
  std::printf("bench_ops --sets on %s (%d SMs): sets of %s streams, shapes %s, median of %d runs\n",
              prop.name, prop.multiProcessorCount, size_list.c_str(), shape_list.c_str(), reps);
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();

  worst w_ratio, w_user, w_host;
  int n_cases = 0, n_counted = 0;
  for (const auto& e : shapes) {
    const std::string shape = shape_name(e);
    inputs in;
    {
      vox::stream_set loader(hi);
      make_inputs(loader, e, in);
    }

    std::vector<set_run> runs;
    for (const std::size_t n : sizes) {
      set_run r;
      r.size = n;
      r.set = std::make_unique<vox::stream_set>(n);
      r.t = std::make_unique<timer>(*r.set);
      r.f32_out = std::make_unique<vox::volume<float>>(*r.set, e);
      r.u16_out = std::make_unique<vox::volume<std::uint16_t>>(*r.set, e);
      r.ctx = std::make_unique<context>();
      r.ctx->streams = r.set.get();
      r.ctx->ext = e;
      r.ctx->f32_in = &in.f32;
      r.ctx->u16_in = &in.u16;
      r.ctx->f32_out = r.f32_out.get();
      r.ctx->u16_out = r.u16_out.get();
      register_cases(*r.ctx);
      r.set->synchronize();
      r.user.set = std::make_unique<vox::stream_set>(n);
      r.user.f32_out = std::make_unique<vox::volume<float>>(*r.user.set, e);
      r.user.u16_out = std::make_unique<vox::volume<std::uint16_t>>(*r.user.set, e);
      r.user.ctx = std::make_unique<context>();
      r.user.ctx->streams = r.user.set.get();
      r.user.ctx->ext = e;
      r.user.ctx->f32_in = &in.f32;
      r.user.ctx->u16_in = &in.u16;
      r.user.ctx->f32_out = r.user.f32_out.get();
      r.user.ctx->u16_out = r.user.u16_out.get();
      register_cases(*r.user.ctx);
      r.user.set->synchronize();
      runs.push_back(std::move(r));
    }
    const std::vector<bench_case>& cases = runs.front().ctx->cases;
    for (const auto& r : runs) {
      bool same = r.ctx->cases.size() == cases.size() && r.user.ctx->cases.size() == cases.size();
      for (std::size_t c = 0; same && c < cases.size(); ++c)
        same = r.ctx->cases[c].name == cases[c].name && r.ctx->cases[c].dtype == cases[c].dtype &&
               r.user.ctx->cases[c].name == cases[c].name;
      if (!same) {
        std::fprintf(stderr, "bench_ops: --sets: the families registered different cases on a "
                             "set of %zu streams\n", r.size);
        return 2;
      }
    }

    std::printf("\n%s: %zu cases\n", shape.c_str(), cases.size());
    // The harness alone (fork and join of every stream, no op): part of every ms figure.
    for (auto& r : runs) {
      const float empty = r.t->median(reps, [](int) {});
      std::vector<double> warm, u, h;
      for (int i = 0; i < 3; ++i) user_once(*r.user.set, [](int) {}, i, warm, warm);
      for (int i = 0; i < reps; ++i) user_once(*r.user.set, [](int) {}, i, u, h);
      const double user = median_of(u);
      std::printf("%-34s %-4s %-12s %3zu streams %9.4f ms  user %9.4f ms  (no op)\n",
                  "timing harness", "-", shape.c_str(), r.size, static_cast<double>(empty), user);
      std::printf("RESULT sets_harness - shape=%s streams=%zu ms=%.4f user_ms=%.4f\n",
                  shape.c_str(), r.size, static_cast<double>(empty), user);
    }
    std::fflush(stdout);

    for (std::size_t c = 0; c < cases.size(); ++c) {
      const bench_case& bc = cases[c];
      if (!name_selected(o.filter, bc.name)) continue;
      const std::string key = key_of(bc.name);
      // Run by run in turn on every set (3 warm-ups each, then `reps` rounds of one timed run
      // per set, then as many user-timed rounds), so that a drift of the device's clocks
      // touches every set's figures alike; each figure is the median of its runs.
      std::vector<figures> f(runs.size());
      const std::size_t nk = runs.size();
      std::vector<std::vector<double>> ms(nk), host(nk), user(nk), synced(nk);
      std::vector<double> warm;  // the warm-ups' figures, unused
      for (int w = 0; w < 3; ++w)
        for (std::size_t k = 0; k < nk; ++k) {
          runs[k].t->once([&] { runs[k].ctx->cases[c].run(w); });
          user_once(*runs[k].user.set, runs[k].user.ctx->cases[c].run, w, warm, warm);
        }
      for (int i = 0; i < reps; ++i)
        for (std::size_t k = 0; k < nk; ++k) {
          ms[k].push_back(runs[k].t->once([&] { runs[k].ctx->cases[c].run(i); }));
          host[k].push_back(runs[k].t->host_us);
        }
      for (int i = 0; i < reps; ++i)
        for (std::size_t k = 0; k < nk; ++k)
          user_once(*runs[k].user.set, runs[k].user.ctx->cases[c].run, i, user[k], synced[k]);
      for (std::size_t k = 0; k < nk; ++k) {
        set_run& r = runs[k];
        f[k].ms = median_of(ms[k]);
        f[k].host_us = median_of(host[k]);
        f[k].user_ms = median_of(user[k]);
        f[k].host_us_synced = median_of(synced[k]);
        std::printf("%-34s %-4s %-12s %3zu streams %9.4f ms  user %9.4f ms  host %7.1f us\n",
                    bc.name.c_str(), bc.dtype.c_str(), shape.c_str(), r.size, f[k].ms,
                    f[k].user_ms, f[k].host_us);
        std::printf(
            "RESULT sets %s %s shape=%s streams=%zu ms=%.4f user_ms=%.4f host_us=%.1f "
            "host_us_synced=%.1f\n",
            key.c_str(), bc.dtype.c_str(), shape.c_str(), r.size, f[k].ms, f[k].user_ms,
            f[k].host_us, f[k].host_us_synced);
      }
      double host_max = 0;
      for (const auto& x : f) host_max = std::max(host_max, x.host_us);
      const double in_bytes =
          static_cast<double>(e.voxels()) * (bc.dtype == "f32" ? 4.0 : bc.dtype == "u16" ? 2.0 : 1.0);
      const bool counted = in_bytes >= counted_bytes;
      const std::string where = key + "/" + bc.dtype + "/" + shape;
      ++n_cases;
      if (counted) {
        ++n_counted;
        w_host.see(host_max, host_us_target, where);
      }
      if (compare) {
        const double ratio = f.back().ms / f.front().ms;
        const double uratio = f.back().user_ms / f.front().user_ms;
        if (counted) {
          w_ratio.see(ratio, ratio_target, where);
          w_user.see(uratio, ratio_target, where);
        }
        std::printf(
            "RESULT sets_ratio %s %s shape=%s ms_%zu=%.4f ms_%zu=%.4f ratio=%.3f user_ratio=%.3f "
            "host_us_max=%.1f MB=%.0f counted=%d\n",
            key.c_str(), bc.dtype.c_str(), shape.c_str(), lo, f.front().ms, hi, f.back().ms, ratio,
            uratio, host_max, in_bytes / 1e6, counted ? 1 : 0);
      }
      std::fflush(stdout);
    }
    for (auto& r : runs) {
      r.set->synchronize();
      r.user.set->synchronize();
    }
    // runs, then the inputs, are freed here (stream-ordered).
  }

  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\nsets summary: %d cases (case x dtype x shape), %d counted (input >= 32 MB); took "
              "%.1f s\n", n_cases, n_counted, secs);
  auto line = [](const char* what, const worst& w, double target, const char* unit) {
    if (w.value < 0) {
      std::printf("  %-12s -\n", what);
      return;
    }
    std::printf("  %-12s worst %8.3f%s (target <= %g%s) %s; %d counted case%s miss%s it\n", what,
                w.value, unit, target, unit, w.where.c_str(), w.missed, w.missed == 1 ? "" : "s",
                w.missed == 1 ? "es" : "");
  };
  if (compare) {
    line("ratio", w_ratio, ratio_target, "");
    line("user_ratio", w_user, ratio_target, "");
  }
  line("host_us", w_host, host_us_target, " us");
  std::printf("RESULT sets_summary streams=%zu/%zu cases=%d counted=%d%s", hi, lo, n_cases,
              n_counted,
              vox::detail::filt::gauss_fused.load() ? " gaussian=fused" : "");
  if (compare)
    std::printf(" worst_ratio=%.3f worst_ratio_case=%s ratio_missed=%d worst_user_ratio=%.3f "
                "worst_user_ratio_case=%s user_ratio_missed=%d ratio_target=%.2f",
                w_ratio.value, w_ratio.where.empty() ? "-" : w_ratio.where.c_str(), w_ratio.missed,
                w_user.value, w_user.where.empty() ? "-" : w_user.where.c_str(), w_user.missed,
                ratio_target);
  std::printf(" worst_host_us=%.1f worst_host_us_case=%s host_us_missed=%d host_us_target=%.0f\n",
              w_host.value, w_host.where.empty() ? "-" : w_host.where.c_str(), w_host.missed,
              host_us_target);
  return 0;
}

}  // namespace voxbench
