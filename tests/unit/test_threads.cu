// Several host threads using voxstream at once (issue 18): threads that share one input volume,
// each with its own stream_set; threads that share one stream_set; threads with separate sets
// and volumes. Every result is checked against a host reference. The host-tsan preset runs these
// tests under ThreadSanitizer, which also checks the ledgers and sets for data races.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume.hpp>

#include "../common/random.hpp"

namespace threads_test {

using vox::extent3;

constexpr std::size_t n_threads = 4;
constexpr std::size_t rounds = 12;
const extent3 e{23, 17, 21};

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  return vox_test::random_floats(n, seed, -50.0f, 80.0f);
}

double host_sum(const std::vector<float>& v) {
  long double s = 0;
  for (float x : v) s += x;
  return static_cast<double>(s);
}

// What one thread found wrong (checked on the main thread: failures name the thread and round).
struct report {
  std::vector<std::string> errors;
  void expect(bool ok, const std::string& what) {
    if (!ok) errors.push_back(what);
  }
};

// One thread's work on `s`: out = in * k, then out + in = in * (k + 1), and sum(in); all checked.
void scale_round(vox::stream_set& s, const vox::volume<float>& in, const std::vector<float>& h,
                 double h_sum, vox::volume<float>& out, vox::volume<float>& out2, float k,
                 const std::string& who, report& r) {
  vox::multiply(s, in, static_cast<double>(k), out);
  vox::add(s, out, in, out2);
  const auto total = vox::sum(s, in);
  std::vector<float> got(h.size()), got2(h.size());
  vox::download(s, out, got.data(), got.size());
  vox::download(s, out2, got2.data(), got2.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < h.size(); ++i) {
    const float want = h[i] * k;
    if (got[i] != want || std::fabs(got2[i] - (want + h[i])) > 1e-4f * (1 + std::fabs(want)))
      ++bad;
  }
  r.expect(bad == 0, who + ": " + std::to_string(bad) + " wrong voxels");
  const double sm = static_cast<double>(total.get());
  r.expect(std::fabs(sm - h_sum) <= 1e-3 * (1 + std::fabs(h_sum)),
           who + ": sum " + std::to_string(sm) + " != " + std::to_string(h_sum));
}

void check(const std::vector<report>& reports) {
  for (std::size_t t = 0; t < reports.size(); ++t)
    for (const auto& err : reports[t].errors) ADD_FAILURE() << "thread " << t << ": " << err;
}

// The reported bug: threads that only read one shared volume (vox::copy) corrupted its ledger.
TEST(Threads, SharedInputEachThreadItsOwnSet) {
  vox::stream_set main(3);
  const auto h = random_floats(e.voxels(), 1801);
  const double h_sum = host_sum(h);
  vox::volume<float> in(main, e);
  vox::upload(main, h.data(), h.size(), in);
  main.synchronize();

  std::vector<report> reports(n_threads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      vox::stream_set s(1 + t % 3);  // 1, 2 or 3 streams: different slab boundaries
      vox::volume<float> out(s, e), out2(s, e), copied(s, e);
      for (std::size_t i = 0; i < rounds; ++i) {
        const std::string who = "round " + std::to_string(i);
        vox::copy(s, in, copied);
        std::vector<float> got(h.size());
        vox::download(s, copied, got.data(), got.size());
        reports[t].expect(got == h, who + ": copy differs");
        scale_round(s, in, h, h_sum, out, out2, static_cast<float>(t + 2), who, reports[t]);
        if (i % 4 == 3) {
          vox::stream_set short_lived(2);  // a set that reads `in` and goes away
          vox::volume<float> tmp(short_lived, e);
          vox::copy(short_lived, in, tmp);
          reports[t].expect(static_cast<double>(vox::sum(short_lived, tmp).get()) ==
                                static_cast<double>(vox::sum(s, in).get()),
                            who + ": short-lived set's copy differs");
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  check(reports);
  // The shared input is unchanged, and usable from its own set afterwards.
  std::vector<float> after(h.size());
  vox::download(main, in, after.data(), after.size());
  EXPECT_EQ(after, h);
}

// The same with many thin slices and sets of 1 to 7 streams: every read splits and merges the
// shared ledger's runs at different slab boundaries (where unlocked reads corrupted the heap).
TEST(Threads, SharedInputLedgerChurn) {
  const extent3 thin{4, 3, 61};
  vox::stream_set main(2);
  const auto h = random_floats(thin.voxels(), 1802);
  vox::volume<float> in(main, thin);
  vox::upload(main, h.data(), h.size(), in);
  main.synchronize();
  std::vector<report> reports(n_threads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<vox::stream_set> sets;
      std::vector<vox::volume<float>> outs;
      for (std::size_t k = 0; k < 3; ++k) {
        sets.emplace_back(1 + (t * 3 + k) % 7);
        outs.emplace_back(sets.back(), thin);
      }
      for (std::size_t i = 0; i < 1500; ++i) {
        const std::size_t k = i % 3;
        vox::copy(sets[k], in, outs[k]);
        if (i % 97 == 0) {
          std::vector<float> got(h.size());
          vox::download(sets[k], outs[k], got.data(), got.size());
          reports[t].expect(got == h, "round " + std::to_string(i) + ": copy differs");
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  check(reports);
  EXPECT_LE(in.ledger().runs().size(), thin.z);
}

// Threads that share one stream_set, each with its own volumes (run_op serialises them).
TEST(Threads, SharedStreamSet) {
  vox::stream_set shared(3);
  std::vector<report> reports(n_threads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      const auto h = random_floats(e.voxels(), 1900 + static_cast<unsigned>(t));
      const double h_sum = host_sum(h);
      vox::volume<float> in(shared, e), out(shared, e), out2(shared, e);
      vox::upload(shared, h.data(), h.size(), in);
      for (std::size_t i = 0; i < rounds; ++i) {
        scale_round(shared, in, h, h_sum, out, out2, static_cast<float>(i % 5) - 1.5f,
                    "round " + std::to_string(i), reports[t]);
        if (i % 3 == 0) shared.synchronize();
      }
    });
  }
  for (auto& th : threads) th.join();
  check(reports);
}

// Threads that share one set and one input volume, and write disjoint outputs and one shared
// output volume (writes of the same value: the ledger orders them, the result is defined).
TEST(Threads, SharedSetSharedVolumes) {
  vox::stream_set shared(2);
  const auto h = random_floats(e.voxels(), 2017);
  vox::volume<float> in(shared, e), common(shared, e);
  vox::upload(shared, h.data(), h.size(), in);
  std::vector<report> reports(n_threads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      vox::volume<float> mine(shared, e);
      for (std::size_t i = 0; i < rounds; ++i) {
        vox::copy(shared, in, common);
        vox::add(shared, common, 1.0, mine);
        std::vector<float> got(h.size());
        vox::download(shared, mine, got.data(), got.size());
        std::size_t bad = 0;
        for (std::size_t j = 0; j < h.size(); ++j) bad += got[j] != h[j] + 1.0f;
        reports[t].expect(bad == 0, "round " + std::to_string(i) + ": " + std::to_string(bad) +
                                        " wrong voxels");
      }
    });
  }
  for (auto& th : threads) th.join();
  check(reports);
}

// Deferred marks (exec::defer_mark) recorded from several threads at once: one thread keeps
// rewriting a shared volume (the same values) on its own set, whose marks stay deferred until
// needed; reader threads on their own sets wait on those marks (recording them from their
// threads) while the writer's next op records them from its own, and the writer's rewrites wait
// on the readers' deferred marks in turn. Slab policies of a slab per stream make every op mark
// several streams.
TEST(Threads, DeferredMarksRecordedFromSeveralThreads) {
  vox::stream_set_options o;
  o.policy = vox::slab_policy::every_stream();
  vox::stream_set writer_set(3, o);
  const auto h = random_floats(e.voxels(), 2203);
  vox::volume<float> in(writer_set, e), shared(writer_set, e);
  vox::upload(writer_set, h.data(), h.size(), in);
  vox::multiply(writer_set, in, 2.0, shared);
  std::vector<report> reports(n_threads + 1);
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (std::size_t i = 0; i < 4 * rounds; ++i) vox::multiply(writer_set, in, 2.0, shared);
  });
  for (std::size_t t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      vox::stream_set s(1 + t % 3, o);
      vox::volume<float> got_v(s, e);
      for (std::size_t i = 0; i < rounds; ++i) {
        vox::add(s, shared, 1.0, got_v);
        std::vector<float> got(h.size());
        vox::download(s, got_v, got.data(), got.size());
        std::size_t bad = 0;
        for (std::size_t j = 0; j < h.size(); ++j) bad += got[j] != h[j] * 2.0f + 1.0f;
        reports[t + 1].expect(bad == 0, "round " + std::to_string(i) + ": " +
                                            std::to_string(bad) + " wrong voxels");
      }
    });
  }
  for (auto& th : threads) th.join();
  check(reports);
  writer_set.synchronize();
  for (std::size_t z = 0; z < e.z; ++z)
    EXPECT_EQ(shared.ledger().entry(z).writer.seq,
              vox::exec::completed_seq(*shared.ledger().entry(z).writer.stream))
        << "slice " << z << ": its writer not complete after synchronize";
}

// Threads with separate sets and volumes: nothing shared but the library's own state.
TEST(Threads, SeparateSets) {
  std::vector<report> reports(n_threads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < n_threads; ++t) {
    threads.emplace_back([&, t] {
      vox::stream_set s(2, vox::stream_set_options{
                               t % 2 ? vox::slice_mapping::round_robin
                                     : vox::slice_mapping::contiguous});
      const auto h = random_floats(e.voxels(), 2100 + static_cast<unsigned>(t));
      const double h_sum = host_sum(h);
      vox::volume<float> in(s, e), out(s, e), out2(s, e);
      vox::upload(s, h.data(), h.size(), in);
      for (std::size_t i = 0; i < rounds; ++i)
        scale_round(s, in, h, h_sum, out, out2, 0.5f + static_cast<float>(i),
                    "round " + std::to_string(i), reports[t]);
    });
  }
  for (auto& th : threads) th.join();
  check(reports);
}

}  // namespace threads_test
