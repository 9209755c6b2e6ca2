// The per-slice dependency ledger. Its decisions (which cudaStreamWaitEvent calls run_op
// inserts) are backend-independent, so these tests check the exact set of waits on both
// backends through stream_set's wait log.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/exec/launch.hpp>
#include <voxstream/voxstream.hpp>

#include "../../src/exec/capture_flag.hpp"
#include "../common/random.hpp"
#include "../common/volumes.hpp"

namespace voxtest_ledger {

using wait_pair = std::pair<std::size_t, std::size_t>;  // (waiter index, source index)

vox::stream_set logged_set(std::size_t n, vox::slice_mapping m = vox::slice_mapping::contiguous) {
  vox::stream_set_options o;
  o.log_waits = true;
  o.mapping = m;
  o.policy = vox::slab_policy::every_stream();  // ops on a slab per stream, as the tests count
  return vox::stream_set(n, o);
}

// The waits of the log, as a multiset (so that a duplicate wait shows up).
std::multiset<wait_pair> waits_of(const vox::stream_set& s) {
  std::multiset<wait_pair> w;
  for (const auto& r : s.wait_log()) {
    EXPECT_TRUE(r.source_in_set) << r.op;
    EXPECT_EQ(r.source_id, s.state(r.source_index)->id) << r.op;
    w.insert({r.waiter_index, r.source_index});
  }
  EXPECT_EQ(w.size(), s.waits_inserted());
  return w;
}

std::string show(const std::multiset<wait_pair>& w) {
  std::string s;
  for (const auto& p : w) s += "(" + std::to_string(p.first) + "<-" + std::to_string(p.second) + ")";
  return s;
}

const vox::exec::slab_fn noop = [](vox::stream_view, const vox::slab&) {};

// Each stream of the plan writes its slabs of every volume in `vs` (a no-op that only updates the
// ledger); afterwards every slice's last writer is the stream it maps to.
template <class... V>
void touch(vox::stream_set& s, std::size_t nz, V&... vs) {
  vox::exec::run_op(s, "touch", s.plan(nz), {vox::write(vs)...}, noop);
}

// out = a * in + b, per voxel.
void affine(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out, float a,
            float b) {
  const auto i = in.view();
  const auto o = out.view();
  vox::for_each_voxel(s, {vox::read(in), vox::write(out)},
                      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                        o(x, y, z) = a * i(x, y, z) + b;
                      });
}

// out = in(z-1) + in(z+1), clamped at the ends: reads `in` with a halo of one slice.
void zsum(vox::stream_set& s, const vox::volume<float>& in, vox::volume<float>& out) {
  const auto i = in.view();
  const auto o = out.view();
  const std::size_t nz = in.extent().z;
  vox::for_each_voxel(s, {vox::read(in, 1), vox::write(out)},
                      [=] VOX_LAMBDA(std::size_t x, std::size_t y, std::size_t z) {
                        const std::size_t zm = z > 0 ? z - 1 : 0;
                        const std::size_t zp = z + 1 < nz ? z + 1 : z;
                        o(x, y, z) = i(x, y, zm) + i(x, y, zp);
                      });
}

// The streams each stream must wait on when its slabs read [z0 - h, z1 + h) of a volume whose
// slices were last written by the streams of the same plan: a reference built from the plan.
// periodic: the halo wraps around the ends (slice z - h of slab 0 is slice nz + z - h).
std::multiset<wait_pair> expected_halo_waits(const std::vector<vox::slab>& plan, std::size_t nz,
                                             std::size_t h, bool periodic = false) {
  std::vector<std::size_t> owner(nz);
  for (const auto& w : plan)
    for (std::size_t z = w.z0; z < w.z1; ++z) owner[z] = w.stream;
  std::set<wait_pair> need;
  for (const auto& w : plan) {
    const auto lo = static_cast<std::ptrdiff_t>(w.z0) - static_cast<std::ptrdiff_t>(h);
    const auto hi = static_cast<std::ptrdiff_t>(w.z1 + h);
    const auto n = static_cast<std::ptrdiff_t>(nz);
    for (std::ptrdiff_t z = lo; z < hi; ++z) {
      if (!periodic && (z < 0 || z >= n)) continue;
      const auto zz = static_cast<std::size_t>(((z % n) + n) % n);
      if (owner[zz] != w.stream) need.insert({w.stream, owner[zz]});
    }
  }
  return {need.begin(), need.end()};
}

struct entry_snap {
  std::uint64_t writer_id{0};
  std::uint64_t writer_seq{0};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> readers;
  bool operator==(const entry_snap& o) const {
    return writer_id == o.writer_id && writer_seq == o.writer_seq && readers == o.readers;
  }
};

std::vector<entry_snap> snap(const vox::exec::slice_ledger& l) {
  std::vector<entry_snap> out;
  for (std::size_t z = 0; z < l.slices(); ++z) {
    const auto& e = l.entry(z);
    entry_snap s;
    if (e.writer.valid()) {
      s.writer_id = e.writer.stream->id;
      s.writer_seq = e.writer.seq;
    }
    for (const auto& r : e.readers) s.readers.push_back({r.stream->id, r.seq});
    out.push_back(s);
  }
  return out;
}

struct set_snap {
  std::size_t waits{0};
  std::size_t events{0};
  std::size_t log{0};
  std::vector<std::uint64_t> recorded;
  std::vector<std::uint64_t> completed;
  bool operator==(const set_snap& o) const {
    return waits == o.waits && events == o.events && log == o.log && recorded == o.recorded &&
           completed == o.completed;
  }
};

set_snap snap(const vox::stream_set& s) {
  set_snap out{s.waits_inserted(), s.events_recorded(), s.wait_log().size(), {}, {}};
  for (std::size_t i = 0; i < s.size(); ++i) {
    out.recorded.push_back(s.state(i)->recorded);
    out.completed.push_back(s.state(i)->completed);
  }
  return out;
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  return vox_test::random_floats(n, seed, -1.0f, 1.0f);
}

std::vector<float> to_host(vox::stream_set& s, const vox::volume<float>& v) {
  return vox_test::fetch(s, v, -777.0f);
}

}  // namespace voxtest_ledger

using namespace voxtest_ledger;

class LedgerN : public ::testing::TestWithParam<std::tuple<std::size_t, vox::slice_mapping>> {};

// Volumes are created on stream 0; the first op that touches them on stream i > 0 waits on
// stream 0 exactly once (on the latest creation event only).
TEST_P(LedgerN, CreationIsOnStreamZeroAndTheFirstOpWaitsOnItOnce) {
  const auto [n, mapping] = GetParam();
  const std::size_t nz = 37;
  vox::stream_set s = logged_set(n, mapping);
  vox::volume<float> a(s, {7, 5, nz}), b(s, {7, 5, nz}), c(s, {7, 5, nz});
  EXPECT_EQ(s.waits_inserted(), 0u);
  for (const auto* v : {&a, &b, &c}) {
    EXPECT_EQ(v->home_stream(), s.stream(0));
    for (std::size_t z = 0; z < nz; ++z) {
      ASSERT_TRUE(v->ledger().entry(z).writer.valid());
      EXPECT_EQ(v->ledger().entry(z).writer.stream.get(), s.state(0).get());
      EXPECT_TRUE(v->ledger().entry(z).readers.empty());
    }
  }
  const std::uint64_t latest_creation = s.state(0)->recorded;
  EXPECT_EQ(c.ledger().entry(0).writer.seq, latest_creation);

  touch(s, nz, a, b, c);
  std::multiset<wait_pair> expect;
  for (std::size_t i = 1; i < n; ++i) expect.insert({i, 0});
  EXPECT_EQ(waits_of(s), expect) << show(waits_of(s));
  for (const auto& r : s.wait_log()) {
    EXPECT_EQ(r.source_seq, latest_creation);
    EXPECT_EQ(r.op, "touch");
  }
  EXPECT_EQ(s.events_recorded(), n);  // one event per stream used
}

// Chains of per-slab ops on the same slabs need no waits at all.
TEST_P(LedgerN, ChainsOfPerSliceOpsNeedZeroWaits) {
  const auto [n, mapping] = GetParam();
  const vox::extent3 e{9, 4, 37};
  vox::stream_set s = logged_set(n, mapping);
  vox::volume<float> a(s, e), b(s, e), c(s, e);
  touch(s, e.z, a, b, c);
  s.reset_counters();
  EXPECT_EQ(s.waits_inserted(), 0u);
  EXPECT_EQ(s.events_recorded(), 0u);
  EXPECT_TRUE(s.wait_log().empty());

  for (int rep = 0; rep < 3; ++rep) {
    vox::fill(s, a, 1.5f + static_cast<float>(rep));
    vox::copy(s, a, b);
    affine(s, b, c, 2.0f, 1.0f);
  }
  EXPECT_EQ(s.waits_inserted(), 0u) << show(waits_of(s));
  EXPECT_TRUE(s.wait_log().empty());
  EXPECT_EQ(s.events_recorded(), 9 * n);

  const auto h = to_host(s, c);
  for (std::size_t k = 0; k < h.size(); ++k) ASSERT_EQ(h[k], 2.0f * 3.5f + 1.0f) << k;
}

// Without the initial touch, each op of the first round waits on stream 0 once per other stream
// (for the creation of the volume it writes); later rounds need none.
TEST_P(LedgerN, FirstRoundWaitsOnlyForCreation) {
  const auto [n, mapping] = GetParam();
  const vox::extent3 e{3, 2, 37};
  vox::stream_set s = logged_set(n, mapping);
  vox::volume<float> a(s, e), b(s, e), c(s, e);
  vox::fill(s, a, 4.0f);
  vox::copy(s, a, b);
  affine(s, b, c, 0.5f, -1.0f);
  std::multiset<wait_pair> expect;
  for (int op = 0; op < 3; ++op)
    for (std::size_t i = 1; i < n; ++i) expect.insert({i, 0});
  EXPECT_EQ(waits_of(s), expect) << show(waits_of(s));
  s.reset_counters();
  for (int rep = 0; rep < 2; ++rep) {
    vox::fill(s, a, 4.0f);
    vox::copy(s, a, b);
    affine(s, b, c, 0.5f, -1.0f);
  }
  EXPECT_EQ(s.waits_inserted(), 0u) << show(waits_of(s));
  const auto h = to_host(s, c);
  for (std::size_t k = 0; k < h.size(); ++k) ASSERT_EQ(h[k], 1.0f) << k;
}

// After synchronize() every earlier event is known complete: no waits, even for a stencil and a
// whole-volume read.
TEST_P(LedgerN, NoWaitsAfterSynchronize) {
  const auto [n, mapping] = GetParam();
  const vox::extent3 e{4, 3, 23};
  vox::stream_set s = logged_set(n, mapping);
  vox::volume<float> in(s, e), out(s, e);
  vox::fill(s, in, 2.0f);  // waits on creation
  s.synchronize();
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(s.state(i)->completed, s.state(i)->recorded);
  s.reset_counters();
  zsum(s, in, out);
  vox::exec::run_op(s, "whole", {{n - 1, 0, e.z}}, {vox::read_all(in)}, noop);
  EXPECT_EQ(s.waits_inserted(), 0u) << show(waits_of(s));
}

INSTANTIATE_TEST_SUITE_P(
    Ledger, LedgerN,
    ::testing::Combine(::testing::Values<std::size_t>(1, 2, 3, 4, 8),
                       ::testing::Values(vox::slice_mapping::contiguous,
                                         vox::slice_mapping::round_robin)),
    [](const ::testing::TestParamInfo<LedgerN::ParamType>& p) {
      return "N" + std::to_string(std::get<0>(p.param)) +
             (std::get<1>(p.param) == vox::slice_mapping::contiguous ? "_contiguous"
                                                                      : "_round_robin");
    });

class LedgerHalo : public ::testing::TestWithParam<std::size_t> {};

// A halo-1 stencil over contiguous slabs: stream i waits only on streams i-1 and i+1, once each,
// on their latest events: 2(N-1) waits in all.
TEST_P(LedgerHalo, StencilWaitsOnlyOnNeighbouringSlabs) {
  const std::size_t n = GetParam();
  for (std::size_t nz : {std::size_t{37}, n}) {  // n: slabs of one slice
    SCOPED_TRACE("nz=" + std::to_string(nz));
    vox::stream_set s = logged_set(n);
    vox::volume<float> in(s, {5, 3, nz}), out(s, {5, 3, nz});
    touch(s, nz, in, out);
    vox::fill(s, in, 1.0f);
    s.reset_counters();
    EXPECT_EQ(s.waits_inserted(), 0u);

    std::vector<std::uint64_t> latest;
    for (std::size_t i = 0; i < n; ++i) latest.push_back(s.state(i)->recorded);
    vox::exec::run_op(s, "stencil", s.plan(nz), {vox::read(in, 1), vox::write(out)}, noop);

    std::multiset<wait_pair> expect;
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0) expect.insert({i, i - 1});
      if (i + 1 < n) expect.insert({i, i + 1});
    }
    EXPECT_EQ(waits_of(s), expect) << show(waits_of(s));
    EXPECT_EQ(s.waits_inserted(), 2 * (n - 1));
    for (const auto& r : s.wait_log()) EXPECT_EQ(r.source_seq, latest[r.source_index]);

    // The same through for_each_voxel, with real data, after the ledger has been refreshed.
    vox::fill(s, in, 1.0f);  // WAR against the stencil's halo reads: 2(N-1) waits again
    EXPECT_EQ(s.waits_inserted(), 4 * (n - 1)) << show(waits_of(s));
    s.reset_counters();
    zsum(s, in, out);
    EXPECT_EQ(waits_of(s), expect) << show(waits_of(s));
    const auto h = to_host(s, out);
    for (std::size_t k = 0; k < h.size(); ++k) ASSERT_EQ(h[k], 2.0f) << k;
  }
}

// A wider halo reaches further: the waits are exactly the owners of [z0-h, z1+h) minus itself.
TEST_P(LedgerHalo, WiderHaloWaitsOnEveryStreamItReaches) {
  const std::size_t n = GetParam();
  const std::size_t nz = 2 * n + 1;
  for (std::size_t h : {std::size_t{2}, std::size_t{3}, nz}) {
    SCOPED_TRACE("halo=" + std::to_string(h));
    vox::stream_set s = logged_set(n);
    vox::volume<float> in(s, {2, 2, nz}), out(s, {2, 2, nz});
    touch(s, nz, in, out);
    s.reset_counters();
    vox::exec::run_op(s, "stencil", s.plan(nz), {vox::read(in, h), vox::write(out)}, noop);
    const auto expect = expected_halo_waits(s.plan(nz), nz, h);
    EXPECT_EQ(waits_of(s), expect) << show(waits_of(s));
    if (h >= nz) {
      EXPECT_EQ(s.waits_inserted(), n * (n - 1));  // everyone reads everything
    }
  }
}

// A periodic halo (border::wrap reads) also reaches across the volume's ends: the first slab
// waits on the writers of the last slices and the last slab on those of the first, and nobody
// waits twice on a stream whose slices both ranges reach.
TEST_P(LedgerHalo, PeriodicHaloAlsoWaitsAcrossTheEnds) {
  const std::size_t n = GetParam();
  for (std::size_t nz : {std::size_t{3 * n + 2}, std::size_t{37}}) {
    for (std::size_t h : {std::size_t{1}, std::size_t{2}, std::size_t{3}, nz - 1, nz}) {
      if (h > nz) continue;
      SCOPED_TRACE("nz=" + std::to_string(nz) + " halo=" + std::to_string(h));
      for (auto m : {vox::slice_mapping::contiguous, vox::slice_mapping::round_robin}) {
        vox::stream_set s = logged_set(n, m);
        vox::volume<float> in(s, {2, 2, nz}), out(s, {2, 2, nz});
        touch(s, nz, in, out);
        s.reset_counters();
        vox::exec::run_op(s, "wrap stencil", s.plan(nz),
                          {vox::read_periodic(in, h), vox::write(out)}, noop);
        EXPECT_EQ(waits_of(s), expected_halo_waits(s.plan(nz), nz, h, true)) << show(waits_of(s));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ledger, LedgerHalo, ::testing::Values<std::size_t>(1, 2, 3, 4, 8),
                         [](const ::testing::TestParamInfo<std::size_t>& p) {
                           return "N" + std::to_string(p.param);
                         });

// Round-robin puts neighbouring slices on different streams: every stream waits on both of its
// neighbours modulo N, a larger set than the contiguous mapping's 2(N-1).
TEST(Ledger, RoundRobinStencilWaitsOnNeighboursModuloN) {
  const std::size_t n = 4, nz = 37;
  vox::stream_set s = logged_set(n, vox::slice_mapping::round_robin);
  vox::volume<float> in(s, {6, 2, nz}), out(s, {6, 2, nz});
  touch(s, nz, in, out);
  vox::fill(s, in, 3.0f);
  s.reset_counters();
  vox::exec::run_op(s, "stencil", s.plan(nz), {vox::read(in, 1), vox::write(out)}, noop);
  std::multiset<wait_pair> expect;
  for (std::size_t i = 0; i < n; ++i) {
    expect.insert({i, (i + n - 1) % n});
    expect.insert({i, (i + 1) % n});
  }
  EXPECT_EQ(waits_of(s), expect) << show(waits_of(s));
  EXPECT_EQ(waits_of(s), expected_halo_waits(s.plan(nz), nz, 1));
  EXPECT_EQ(s.waits_inserted(), 2 * n);
  EXPECT_GT(s.waits_inserted(), 2 * (n - 1));
}

// The wrapped part of a periodic read is recorded as a read: a later write of the last slab
// waits on the stream of the first slab, which read its slices across the end (and a clipped
// halo read would not make it wait).
TEST(Ledger, WriteAfterPeriodicReadWaitsOnTheReadersAcrossTheEnds) {
  const std::size_t n = 3, nz = 9;  // slabs [0, 3), [3, 6), [6, 9) on streams 0, 1, 2
  for (bool periodic : {false, true}) {
    SCOPED_TRACE(periodic ? "periodic" : "clipped");
    vox::stream_set s = logged_set(n);
    vox::volume<float> in(s, {3, 2, nz}), out(s, {3, 2, nz});
    touch(s, nz, in, out);
    vox::exec::run_op(s, "stencil", s.plan(nz),
                      {periodic ? vox::exec::access(vox::read_periodic(in, 1))
                                : vox::exec::access(vox::read(in, 1)),
                       vox::write(out)},
                      noop);
    s.reset_counters();
    touch(s, nz, in);  // write after read: wait on the other streams that read each slab
    std::multiset<wait_pair> expect{{0, 1}, {1, 0}, {1, 2}, {2, 1}};
    if (periodic) expect.insert({{0, 2}, {2, 0}});
    EXPECT_EQ(waits_of(s), expect) << show(waits_of(s));
  }
}

// A one-slab plan's periodic read covers the volume once: the same waits as a plain read.
TEST(Ledger, PeriodicReadOfOneSlabIsAPlainRead) {
  vox::stream_set s = logged_set(3);
  const std::size_t nz = 10;
  vox::volume<float> in(s, {2, 2, nz}), out(s, {2, 2, nz});
  touch(s, nz, in, out);
  s.reset_counters();
  vox::exec::run_op(s, "wrap", {vox::slab{1, 0, nz}}, {vox::read_periodic(in, 4), vox::write(out)},
                    noop);
  EXPECT_EQ(waits_of(s), (std::multiset<wait_pair>{{1, 0}, {1, 2}})) << show(waits_of(s));
}

// A whole-volume op on one stream joins exactly the other streams that wrote the volume.
TEST(Ledger, WholeVolumeReadJoinsEveryWriterOnce) {
  const std::size_t n = 4;
  struct param {
    std::size_t nz;
    std::size_t k;
    std::multiset<wait_pair> expect;
  };
  const param params[] = {
      {37, 3, {wait_pair{3, 0}, wait_pair{3, 1}, wait_pair{3, 2}}},
      {37, 1, {wait_pair{1, 0}, wait_pair{1, 2}, wait_pair{1, 3}}},
      {3, 3, {wait_pair{3, 0}, wait_pair{3, 1}, wait_pair{3, 2}}},  // stream 3 wrote nothing
      {2, 0, {wait_pair{0, 1}}},                                    // only streams 0 and 1 wrote
  };
  for (const auto& p : params) {
    SCOPED_TRACE("nz=" + std::to_string(p.nz) + " k=" + std::to_string(p.k));
    vox::stream_set s = logged_set(n);
    vox::volume<float> in(s, {8, 8, p.nz});
    touch(s, p.nz, in);
    vox::fill(s, in, 5.0f);
    vox::fill(s, in, 6.0f);  // two events per stream: only the latest is waited on
    s.reset_counters();
    std::vector<std::uint64_t> latest;
    for (std::size_t i = 0; i < n; ++i) latest.push_back(s.state(i)->recorded);
    vox::exec::run_op(s, "reduce", {{p.k, 0, p.nz}}, {vox::read_all(in)}, noop);
    EXPECT_EQ(waits_of(s), p.expect) << show(waits_of(s));
    for (const auto& r : s.wait_log()) {
      EXPECT_EQ(r.waiter_index, p.k);
      EXPECT_EQ(r.source_seq, latest[r.source_index]);
    }
    EXPECT_EQ(s.events_recorded(), 1u);
  }
}

// A per-slab op that reads the whole of a volume (vox::read_all) makes every stream join every
// other writer: N(N-1) waits.
TEST(Ledger, PerSlabOpReadingAWholeVolumeJoinsAllWriters) {
  const std::size_t n = 4, nz = 12;
  vox::stream_set s = logged_set(n);
  vox::volume<float> in(s, {3, 3, nz}), out(s, {3, 3, nz});
  touch(s, nz, in, out);
  s.reset_counters();
  vox::exec::run_op(s, "flip", s.plan(nz), {vox::read_all(in), vox::write(out)}, noop);
  std::multiset<wait_pair> expect;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) expect.insert({i, j});
  EXPECT_EQ(waits_of(s), expect) << show(waits_of(s));
}

// Write-after-read: writing slices that other streams read waits on those readers.
TEST(Ledger, WriteAfterReadWaitsOnTheReaders) {
  const std::size_t n = 4, nz = 16;
  vox::stream_set s = logged_set(n);
  vox::volume<float> a(s, {4, 4, nz});
  // Stream 0 writes all of `a`, then every stream reads its slab of it.
  vox::exec::run_op(s, "write_all", {{0, 0, nz}}, {vox::write_all(a)}, noop);
  EXPECT_EQ(s.waits_inserted(), 0u);
  vox::exec::run_op(s, "read", s.plan(nz), {vox::read(a)}, noop);
  std::multiset<wait_pair> raw;
  for (std::size_t i = 1; i < n; ++i) raw.insert({i, 0});
  EXPECT_EQ(waits_of(s), raw) << show(waits_of(s));
  for (std::size_t z = 0; z < nz; ++z) EXPECT_EQ(a.ledger().entry(z).readers.size(), 1u);
  s.reset_counters();

  // Stream 0 writes all of `a` again: it must wait for readers 1..N-1, but not for itself.
  vox::exec::run_op(s, "write_all", {{0, 0, nz}}, {vox::write_all(a)}, noop);
  std::multiset<wait_pair> war;
  for (std::size_t i = 1; i < n; ++i) war.insert({0, i});
  EXPECT_EQ(waits_of(s), war) << show(waits_of(s));
  for (std::size_t z = 0; z < nz; ++z) {
    EXPECT_TRUE(a.ledger().entry(z).readers.empty());
    EXPECT_EQ(a.ledger().entry(z).writer.stream.get(), s.state(0).get());
  }
}

// Halo readers of a slab are readers too: rewriting per slab waits on the neighbours that read
// the slab's edge slices.
TEST(Ledger, WriteAfterHaloReadWaitsOnNeighbours) {
  const std::size_t n = 5, nz = 25;
  vox::stream_set s = logged_set(n);
  vox::volume<float> in(s, {2, 2, nz}), out(s, {2, 2, nz});
  touch(s, nz, in, out);
  vox::exec::run_op(s, "stencil", s.plan(nz), {vox::read(in, 1), vox::write(out)}, noop);
  s.reset_counters();
  vox::fill(s, in, 1.0f);
  std::multiset<wait_pair> expect;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) expect.insert({i, i - 1});
    if (i + 1 < n) expect.insert({i, i + 1});
  }
  EXPECT_EQ(waits_of(s), expect) << show(waits_of(s));
  // Reading again needs nothing: the writers are the readers' own streams.
  s.reset_counters();
  vox::exec::run_op(s, "read", s.plan(nz), {vox::read(in)}, noop);
  EXPECT_EQ(s.waits_inserted(), 0u);
}

// Two writes from stream j (two events), then a read on another stream: one wait, on the later.
TEST(Ledger, OnlyTheLatestEventPerSourceStreamIsWaitedOn) {
  vox::stream_set s = logged_set(3);
  vox::volume<float> in(s, {4, 4, 10});
  vox::exec::run_op(s, "w1", {{1, 0, 5}}, {vox::write(in)}, noop);
  const std::uint64_t first = s.state(1)->recorded;
  vox::exec::run_op(s, "w2", {{1, 5, 10}}, {vox::write(in)}, noop);
  const std::uint64_t second = s.state(1)->recorded;
  ASSERT_GT(second, first);
  EXPECT_EQ(in.ledger().entry(0).writer.seq, first);
  EXPECT_EQ(in.ledger().entry(9).writer.seq, second);
  s.reset_counters();
  vox::exec::run_op(s, "read", {{2, 0, 10}}, {vox::read(in)}, noop);
  ASSERT_EQ(s.waits_inserted(), 1u);
  ASSERT_EQ(s.wait_log().size(), 1u);
  EXPECT_EQ(s.wait_log()[0].waiter_index, 2u);
  EXPECT_EQ(s.wait_log()[0].source_index, 1u);
  EXPECT_EQ(s.wait_log()[0].source_seq, second);
  EXPECT_EQ(s.wait_log()[0].op, "read");
  // Reading only the first half waits on the event that wrote that half.
  s.reset_counters();
  vox::exec::run_op(s, "read0", {{0, 0, 5}}, {vox::read(in)}, noop);
  ASSERT_EQ(s.wait_log().size(), 1u);
  EXPECT_EQ(s.wait_log()[0].source_index, 1u);
  EXPECT_EQ(s.wait_log()[0].source_seq, first);
}

// run_op calls enqueue once per slab in plan order with the slab's stream, records one event per
// stream used, and updates the ledger: writers for writes, one reader entry per stream for reads.
TEST(Ledger, RunOpEnqueuesPerSlabAndRecordsOneEventPerStreamUsed) {
  vox::stream_set s = logged_set(4);
  vox::volume<float> a(s, {2, 2, 12}), b(s, {2, 2, 12});
  s.synchronize();
  const std::vector<vox::slab> plan{{1, 0, 5}, {3, 5, 10}, {1, 10, 12}};
  std::vector<std::pair<vox::native_stream, vox::slab>> calls;
  const auto before = snap(s);
  vox::exec::run_op(s, "custom", plan, {vox::read(a), vox::write(b)},
                    [&](vox::stream_view sv, const vox::slab& w) { calls.push_back({sv.value(), w}); });
  ASSERT_EQ(calls.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(calls[k].first, s.stream(plan[k].stream).value());
    EXPECT_EQ(calls[k].second, plan[k]);
  }
  EXPECT_EQ(s.events_recorded(), before.events + 2);
  EXPECT_EQ(s.state(0)->recorded, before.recorded[0]);
  EXPECT_EQ(s.state(1)->recorded, before.recorded[1] + 1);
  EXPECT_EQ(s.state(2)->recorded, before.recorded[2]);
  EXPECT_EQ(s.state(3)->recorded, before.recorded[3] + 1);
  for (std::size_t z = 0; z < 12; ++z) {
    const std::size_t owner = z >= 5 && z < 10 ? 3 : 1;
    const auto& eb = b.ledger().entry(z);
    EXPECT_EQ(eb.writer.stream.get(), s.state(owner).get()) << z;
    EXPECT_EQ(eb.writer.seq, s.state(owner)->recorded) << z;
    EXPECT_TRUE(eb.readers.empty());
    const auto& ea = a.ledger().entry(z);
    EXPECT_EQ(ea.writer.stream.get(), s.state(0).get()) << z;  // still the creation
    ASSERT_EQ(ea.readers.size(), 1u) << z;
    EXPECT_EQ(ea.readers[0].stream.get(), s.state(owner).get()) << z;
  }
  // A newer read from the same stream replaces the older reader entry.
  vox::exec::run_op(s, "again", plan, {vox::read(a)}, vox::exec::slab_fn(noop));
  for (std::size_t z = 0; z < 12; ++z) {
    ASSERT_EQ(a.ledger().entry(z).readers.size(), 1u) << z;
    EXPECT_EQ(a.ledger().entry(z).readers[0].seq,
              s.state(z >= 5 && z < 10 ? 3 : 1)->recorded);
  }
  // In-place per-slab read-modify-write (no halo) is allowed; the write supersedes the read.
  EXPECT_NO_THROW(vox::exec::run_op(s, "inplace", s.plan(12), {vox::read(a), vox::write(a)}, noop));
  for (std::size_t z = 0; z < 12; ++z) {
    EXPECT_TRUE(a.ledger().entry(z).readers.empty());
    EXPECT_EQ(a.ledger().entry(z).writer.stream.get(), s.state(s.stream_for_slice(z, 12)).get());
  }
}

// --- deferred marks ----------------------------------------------------------------------------------
// run_op's marks are deferred (exec::defer_mark): recorded only when another stream waits on them,
// when their own stream gets more work, or when a handle is handed out; synchronize() settles them
// with no record at all. These tests read the streams through the ledgers' marks, because
// stream_set::state(i) and stream(i) hand a handle out and so record the pending mark.

// Two streams and two volumes, every earlier event complete; write_a(i) writes a on stream i and
// returns the op's mark, still deferred.
class LedgerDeferred : public ::testing::Test {
 protected:
  LedgerDeferred() : s(logged_set(2)), a(s, {3, 2, 4}), b(s, {3, 2, 4}) { s.synchronize(); }
  vox::exec::mark write_a(std::size_t stream) {
    vox::exec::run_op(s, "write a", {{stream, 0, 4}}, {vox::write(a)}, noop);
    const vox::exec::mark m = a.ledger().entry(0).writer;
    EXPECT_TRUE(m.event->deferred());
    return m;
  }
  // write_a(i) with its mark not held here: its stream, a weak handle on its event, and the
  // stream's native records so far.
  struct unheld {
    std::shared_ptr<vox::exec::stream_state> stream;
    std::weak_ptr<vox::exec::pooled_event> event;
    std::uint64_t records;
  };
  unheld write_a_unheld(std::size_t stream) {
    const vox::exec::mark m = write_a(stream);
    return {m.stream, m.event, m.stream->records.load()};
  }
  // Runs an op and says whether `e` was still deferred while its work was enqueued (nullopt:
  // nothing held the event any more).
  std::optional<bool> deferred_during(const std::weak_ptr<vox::exec::pooled_event>& e,
                                      const std::vector<vox::slab>& plan,
                                      const std::vector<vox::exec::access>& acc) {
    std::optional<bool> d;
    vox::exec::run_op(s, "next op", plan, acc, [&](vox::stream_view, const vox::slab&) {
      const auto held = e.lock();
      d = held ? std::optional<bool>(held->deferred()) : std::nullopt;
    });
    return d;
  }
  vox::stream_set s;
  vox::volume<float> a, b;
};

TEST_F(LedgerDeferred, AnOpsMarkIsRecordedWhenAnotherStreamWaitsOnIt) {
  const vox::exec::mark m = write_a(0);
  const std::uint64_t records = m.stream->records.load();
  const std::size_t waits = s.waits_inserted();
  // Stream 1 reads a: its wait on stream 0 records the mark, once.
  vox::exec::run_op(s, "read a", {{1, 0, 4}}, {vox::read(a), vox::write(b)}, noop);
  EXPECT_EQ(s.waits_inserted(), waits + 1);
  EXPECT_FALSE(m.event->deferred());
  EXPECT_EQ(m.stream->records.load(), records + 1);
  // The reading op's own mark is deferred, and so is b's writer (the same mark).
  const vox::exec::mark r = a.ledger().entry(3).readers.at(0);
  EXPECT_TRUE(r.event->deferred());
  EXPECT_EQ(b.ledger().entry(3).writer.event, r.event);
  // A second reader on stream 1 waits on the same event again: no second record on stream 0.
  vox::exec::run_op(s, "read a again", {{1, 0, 4}}, {vox::read(a), vox::write(b)}, noop);
  EXPECT_EQ(s.waits_inserted(), waits + 2);
  EXPECT_EQ(m.stream->records.load(), records + 1);
  // ... but its stream's earlier mark went on the stream before the new op's work.
  EXPECT_FALSE(r.event->deferred());
}

TEST_F(LedgerDeferred, MoreWorkOnItsStreamRecordsItFirst) {
  const vox::exec::mark m = write_a(0);
  const std::uint64_t records = m.stream->records.load();
  bool deferred_during_work = true;
  vox::exec::run_op(s, "write b", {{0, 0, 4}}, {vox::write(b)},
                    [&](vox::stream_view, const vox::slab&) {
                      deferred_during_work = m.event->deferred();
                    });
  EXPECT_FALSE(deferred_during_work) << "the mark was not on the stream before the next op's work";
  EXPECT_EQ(m.stream->records.load(), records + 1);
  EXPECT_TRUE(b.ledger().entry(0).writer.event->deferred());
  EXPECT_EQ(b.ledger().entry(0).writer.seq, m.seq + 1);
}

TEST_F(LedgerDeferred, HandingOutTheStreamRecordsIt) {
  const vox::exec::mark m = write_a(1);
  (void)s.stream(0);
  EXPECT_TRUE(m.event->deferred()) << "another stream's handle";
  (void)s.stream(1);  // the caller may enqueue on it now
  EXPECT_FALSE(m.event->deferred());
}

TEST(LedgerDeferredSets, SynchronizeSettlesThemUnrecorded) {
  vox::stream_set s = logged_set(3);
  vox::volume<float> a(s, {3, 2, 6}), b(s, {3, 2, 6});
  s.synchronize();
  vox::exec::run_op(s, "write a", {{0, 0, 2}, {1, 2, 4}, {2, 4, 6}}, {vox::write(a)}, noop);
  std::vector<vox::exec::mark> marks;
  std::vector<std::uint64_t> records;
  for (std::size_t z : {0, 2, 4}) {
    marks.push_back(a.ledger().entry(z).writer);
    records.push_back(marks.back().stream->records.load());
    ASSERT_TRUE(marks.back().event->deferred()) << z;
  }
  s.synchronize();
  for (std::size_t i = 0; i < marks.size(); ++i) {
    EXPECT_FALSE(marks[i].event->deferred()) << i;
    EXPECT_EQ(marks[i].stream->records.load(), records[i]) << "synchronize recorded an event";
    EXPECT_EQ(vox::exec::completed_seq(*marks[i].stream), marks[i].seq) << i;
  }
  // Complete: an op on another stream needs no wait on them.
  const std::size_t waits = s.waits_inserted();
  vox::exec::run_op(s, "read a", {{2, 0, 6}}, {vox::read(a), vox::write(b)}, noop);
  EXPECT_EQ(s.waits_inserted(), waits);
}

TEST_F(LedgerDeferred, AMarkNobodyHoldsIsNeverRecorded) {
  const unheld m = write_a_unheld(0);
  // The ledger forgets the op (as after a newer writer): nothing holds its mark any more.
  a.ledger().set_all_written(b.ledger().entry(0).writer);
  EXPECT_TRUE(m.event.expired());
  vox::exec::run_op(s, "write b", {{0, 0, 4}}, {vox::write(b)}, noop);
  EXPECT_EQ(m.stream->records.load(), m.records) << "an unneeded mark was recorded";
}

// The next op on a stream records its last mark first only if something will still need it
// there; one that the op's own ledger updates replace everywhere is never recorded.
TEST_F(LedgerDeferred, AMarkTheNextOpSupersedesIsNeverRecorded) {
  const unheld m = write_a_unheld(0);
  EXPECT_EQ(deferred_during(m.event, {{0, 0, 4}}, {vox::write(a)}), std::optional<bool>(true));
  EXPECT_TRUE(m.event.expired()) << "the ledger still holds the superseded mark";
  EXPECT_EQ(m.stream->records.load(), m.records) << "a superseded mark was recorded";
  EXPECT_TRUE(a.ledger().entry(0).writer.event->deferred());
}

TEST_F(LedgerDeferred, AChainOfOpsOnTheSameSlabsRecordsNothing) {
  // Each op reads b with a halo across the two slabs and writes a: every mark of the last op
  // is replaced by the next one's, so none needs a record.
  const std::vector<vox::slab> plan{{0, 0, 2}, {1, 2, 4}};
  vox::exec::run_op(s, "warm", plan, {vox::read(b, 1), vox::write(a)}, noop);
  const auto records = [&] {
    return a.ledger().entry(0).writer.stream->records.load() +
           a.ledger().entry(3).writer.stream->records.load();
  };
  const std::uint64_t before = records();
  const std::size_t waits = s.waits_inserted();
  for (int i = 0; i < 5; ++i)
    vox::exec::run_op(s, "chain", plan, {vox::read(b, 1), vox::write(a)}, noop);
  EXPECT_EQ(s.waits_inserted(), waits);
  EXPECT_EQ(records(), before);
  EXPECT_TRUE(a.ledger().entry(0).writer.event->deferred());
  EXPECT_TRUE(a.ledger().entry(3).writer.event->deferred());
}

TEST_F(LedgerDeferred, AMarkThatStaysAWriterIsRecordedFirst) {
  const unheld m = write_a_unheld(0);
  // A read of a leaves the mark a's writer.
  EXPECT_EQ(deferred_during(m.event, {{0, 0, 4}}, {vox::read(a), vox::write(b)}),
            std::optional<bool>(false));
  EXPECT_EQ(m.stream->records.load(), m.records + 1);
}

TEST_F(LedgerDeferred, APartialOverwriteRecordsTheMarkFirst) {
  const unheld m = write_a_unheld(0);
  EXPECT_EQ(deferred_during(m.event, {{0, 0, 2}}, {vox::write(a)}), std::optional<bool>(false));
  const auto e = m.event.lock();
  ASSERT_TRUE(e);
  EXPECT_EQ(a.ledger().entry(3).writer.event, e);
  EXPECT_EQ(m.stream->records.load(), m.records + 1);
}

TEST_F(LedgerDeferred, AMarkACallerHoldsIsRecordedFirst) {
  const vox::exec::mark m = write_a(0);  // held here: someone may still wait on it
  const std::uint64_t records = m.stream->records.load();
  vox::exec::run_op(s, "write a again", {{0, 0, 4}}, {vox::write(a)}, noop);
  EXPECT_FALSE(m.event->deferred());
  EXPECT_EQ(m.stream->records.load(), records + 1);
}

TEST_F(LedgerDeferred, AMarkAnotherStreamOfTheOpWaitsOnIsRecordedBeforeItsWork) {
  const unheld m = write_a_unheld(0);
  const std::size_t waits = s.waits_inserted();
  // The op rewrites all of a (the mark is superseded), but its slab on stream 1 must wait for
  // stream 0's earlier write of slices 2..3.
  EXPECT_EQ(deferred_during(m.event, {{0, 0, 2}, {1, 2, 4}}, {vox::write(a)}),
            std::optional<bool>(false));
  EXPECT_EQ(s.waits_inserted(), waits + 1);
  EXPECT_EQ(m.stream->records.load(), m.records + 1);
}

TEST(LedgerDeferredSets, InsideACaptureMarksAreRecordedAtOnce) {
  vox::stream_set s = logged_set(1);
  vox::volume<float> a(s, {3, 2, 4});
  s.synchronize();
  {
    const vox::detail::capture_flag capturing;
    vox::exec::run_op(s, "write a", {{0, 0, 4}}, {vox::write(a)}, noop);
  }
  EXPECT_FALSE(a.ledger().entry(0).writer.event->deferred());
}

// --- validation before enqueue ---------------------------------------------------------------------

class LedgerValidation : public ::testing::Test {
 protected:
  LedgerValidation() : s(logged_set(4)), a(s, e), b(s, e), other(s, {5, 4, 12}) {
    vox::upload(s, random_floats(a.size(), 11).data(), a.size(), a);
    vox::upload(s, random_floats(b.size(), 12).data(), b.size(), b);
    vox::upload(s, random_floats(other.size(), 13).data(), other.size(), other);
    vox::exec::run_op(s, "stencil", s.plan(e.z), {vox::read(a, 1), vox::write(b)}, noop);
  }

  // Runs `f`, which must throw vox::invalid_argument without calling the enqueue callback and
  // without changing counters, ledgers or data.
  template <class F>
  void expect_rejected(F&& f, const char* what) {
    SCOPED_TRACE(what);
    const auto data_a = to_host(s, a);
    const auto data_b = to_host(s, b);
    const auto data_o = to_host(s, other);
    const auto set_before = snap(s);
    const auto la = snap(a.ledger()), lb = snap(b.ledger()), lo = snap(other.ledger());
    calls = 0;
    EXPECT_THROW(f(), vox::invalid_argument);
    EXPECT_EQ(calls, 0);
    EXPECT_TRUE(snap(s) == set_before);
    EXPECT_TRUE(snap(a.ledger()) == la);
    EXPECT_TRUE(snap(b.ledger()) == lb);
    EXPECT_TRUE(snap(other.ledger()) == lo);
    EXPECT_EQ(to_host(s, a), data_a);
    EXPECT_EQ(to_host(s, b), data_b);
    EXPECT_EQ(to_host(s, other), data_o);
  }

  vox::exec::slab_fn counting() {
    return [this](vox::stream_view, const vox::slab&) { ++calls; };
  }

  const vox::extent3 e{5, 4, 12};
  vox::stream_set s;
  vox::volume<float> a, b, other;
  vox::volume<float> empty;
  int calls{0};
};

TEST_F(LedgerValidation, MismatchedExtentsInForEachVoxel) {
  vox::volume<float> small(s, {5, 3, 12}, 9.0f);
  expect_rejected([&] { affine(s, a, small, 2.0f, 0.0f); }, "in larger than out");
  expect_rejected([&] { affine(s, small, b, 2.0f, 0.0f); }, "in smaller than out");
  expect_rejected([&] { vox::copy(s, a, small); }, "copy");
  for (float v : to_host(s, small)) ASSERT_EQ(v, 9.0f);
}

TEST_F(LedgerValidation, EmptyVolume) {
  ASSERT_TRUE(empty.empty());
  expect_rejected(
      [&] { vox::exec::run_op(s, "op", s.plan(e.z), {vox::read(empty), vox::write(b)}, counting()); },
      "run_op reading an empty volume");
  expect_rejected(
      [&] { vox::exec::run_op(s, "op", s.plan(e.z), {vox::read(a), vox::write(empty)}, counting()); },
      "run_op writing an empty volume");
  expect_rejected([&] { affine(s, empty, b, 1.0f, 0.0f); }, "for_each_voxel, empty input");
  expect_rejected([&] { affine(s, a, empty, 1.0f, 0.0f); }, "for_each_voxel, empty output");
  expect_rejected([&] { vox::fill(s, empty, 1.0f); }, "fill");
  expect_rejected([&] { vox::copy(s, empty, b); }, "copy from empty");
  expect_rejected([&] { vox::copy(s, a, empty); }, "copy to empty");
}

TEST_F(LedgerValidation, HaloWiderThanTheVolume) {
  expect_rejected(
      [&] {
        vox::exec::run_op(s, "op", s.plan(e.z), {vox::read(a, e.z + 1), vox::write(other)},
                          counting());
      },
      "halo nz+1");
  const vox::exec::slab_fn count = counting();
  EXPECT_NO_THROW(
      vox::exec::run_op(s, "op", s.plan(e.z), {vox::read(a, e.z), vox::write(other)}, count));
  EXPECT_EQ(calls, 4);
}

TEST_F(LedgerValidation, ReadingWithAHaloAndWritingTheSameVolume) {
  expect_rejected(
      [&] { vox::exec::run_op(s, "op", s.plan(e.z), {vox::read(a, 1), vox::write(a)}, counting()); },
      "halo read + write of a");
  expect_rejected(
      [&] {
        vox::exec::run_op(s, "op", s.plan(e.z), {vox::write(a), vox::read(b), vox::read(a, 2)},
                          counting());
      },
      "write first, halo read later");
  expect_rejected(
      [&] { vox::exec::run_op(s, "op", {{0, 0, e.z}}, {vox::read_all(a), vox::write(a)}, counting()); },
      "whole read + write of a");
}

TEST_F(LedgerValidation, WholeVolumeWriteOnSeveralStreams) {
  expect_rejected(
      [&] { vox::exec::run_op(s, "op", s.plan(e.z), {vox::read(b), vox::write_all(a)}, counting()); },
      "write_all on 4 streams");
  expect_rejected(
      [&] {
        vox::exec::run_op(s, "op", {{2, 0, 6}, {3, 6, 12}}, {vox::write_all(a)}, counting());
      },
      "write_all on 2 streams");
}

TEST_F(LedgerValidation, BadPlans) {
  expect_rejected([&] { vox::exec::run_op(s, "op", {}, {vox::write(a)}, counting()); },
                  "empty plan");
  expect_rejected([&] { vox::exec::run_op(s, "op", {{4, 0, 12}}, {vox::write(a)}, counting()); },
                  "stream out of range");
  expect_rejected([&] { vox::exec::run_op(s, "op", {{0, 3, 3}}, {vox::write(a)}, counting()); },
                  "empty slab");
  expect_rejected([&] { vox::exec::run_op(s, "op", {{0, 0, 13}}, {vox::write(a)}, counting()); },
                  "slab beyond the volume");
  // A later slab is bad: nothing of the earlier, valid ones ran either.
  expect_rejected(
      [&] { vox::exec::run_op(s, "op", {{0, 0, 6}, {1, 6, 13}}, {vox::write(a)}, counting()); },
      "second slab beyond the volume");
}

TEST_F(LedgerValidation, MessagesNameTheOpAndTheArgument) {
  try {
    vox::exec::run_op(s, "my_stencil", s.plan(e.z), {vox::read(a), vox::read(empty)}, counting());
    FAIL() << "nothing thrown";
  } catch (const vox::invalid_argument& ex) {
    const std::string msg = ex.what();
    EXPECT_EQ(msg.rfind("voxstream: my_stencil: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("volume argument 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("stream_set.cpp:"), std::string::npos) << msg;
  }
}
