// The run-length storage of slice_ledger: random sequences of writes and reads over random
// ranges give, slice by slice, exactly what a plain per-slice model gives, and the runs stay
// maximal (no two neighbours equal) and few. Both backends (no device work: marks are recorded
// on real streams but nothing waits on them).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/exec/launch.hpp>
#include <voxstream/voxstream.hpp>

namespace voxtest_ledger_runs {

using vox::exec::mark;
using vox::exec::slice_entry;
using vox::exec::slice_ledger;

// A mark as (stream id, seq); readers as a sorted list of them.
using key = std::pair<std::uint64_t, std::uint64_t>;
struct model_entry {
  key writer{0, 0};
  std::vector<key> readers;
  bool operator==(const model_entry& o) const { return writer == o.writer && readers == o.readers; }
};

key key_of(const mark& m) { return m.valid() ? key{m.stream->id, m.seq} : key{0, 0}; }

model_entry model_of(const slice_entry& e) {
  model_entry m{key_of(e.writer), {}};
  for (const auto& r : e.readers) m.readers.push_back(key_of(r));
  std::sort(m.readers.begin(), m.readers.end());
  return m;
}

void model_read(model_entry& e, const mark& m) {
  const key k = key_of(m);
  auto it = std::find_if(e.readers.begin(), e.readers.end(),
                         [&](const key& r) { return r.first == k.first; });
  if (it == e.readers.end()) {
    e.readers.push_back(k);
  } else {
    *it = k;
  }
  std::sort(e.readers.begin(), e.readers.end());
}

::testing::AssertionResult matches(const slice_ledger& l, const std::vector<model_entry>& model) {
  if (l.slices() != model.size()) return ::testing::AssertionFailure() << "slice count";
  for (std::size_t z = 0; z < model.size(); ++z) {
    if (!(model_of(l.entry(z)) == model[z]))
      return ::testing::AssertionFailure() << "slice " << z << " differs from the model";
  }
  // Runs: contiguous from 0, non-empty, and maximal (neighbours differ).
  std::size_t next = 0;
  for (std::size_t i = 0; i < l.runs().size(); ++i) {
    const auto& r = l.runs()[i];
    if (r.z0 != next || r.z1 <= r.z0)
      return ::testing::AssertionFailure() << "run " << i << " is [" << r.z0 << ", " << r.z1
                                           << ") after " << next;
    if (i > 0 && model_of(l.runs()[i - 1].entry) == model_of(r.entry))
      return ::testing::AssertionFailure() << "runs " << i - 1 << " and " << i << " are equal";
    next = r.z1;
  }
  if (next != l.slices()) return ::testing::AssertionFailure() << "runs end at " << next;
  return ::testing::AssertionSuccess();
}

TEST(LedgerRuns, RandomRangesMatchAPerSliceModel) {
  vox::stream_set s(5);
  std::mt19937 rng(20261202);
  for (const std::size_t nz : {1u, 2u, 7u, 64u, 301u}) {
    slice_ledger l(nz);
    std::vector<model_entry> model(nz);
    ASSERT_TRUE(matches(l, model));
    std::uniform_int_distribution<std::size_t> pick_z(0, nz - 1), pick_s(0, s.size() - 1);
    for (int step = 0; step < 400; ++step) {
      const std::size_t z0 = pick_z(rng);
      const std::size_t z1 = z0 + 1 + rng() % (nz - z0);
      const mark m = vox::exec::record_mark(s.state(pick_s(rng)), "test");
      switch (rng() % 5) {
        case 0:  // write
          l.set_written(z0, z1, m);
          for (std::size_t z = z0; z < z1; ++z) model[z] = model_entry{key_of(m), {}};
          break;
        case 1:  // write everything
          if (rng() % 8 == 0) {
            l.set_all_written(m);
            for (auto& e : model) e = model_entry{key_of(m), {}};
            break;
          }
          [[fallthrough]];
        default:  // read
          l.add_reader(z0, z1, m);
          for (std::size_t z = z0; z < z1; ++z) model_read(model[z], m);
      }
      ASSERT_TRUE(matches(l, model)) << "nz " << nz << ", step " << step;
    }
  }
}

TEST(LedgerRuns, EmptyAndOutOfRangeRanges) {
  vox::stream_set s(2);
  slice_ledger l(10);
  const mark m = vox::exec::record_mark(s.state(0), "test");
  l.set_written(4, 4, m);  // empty: nothing changes
  l.add_reader(12, 20, m);
  EXPECT_EQ(l.runs().size(), 1u);
  EXPECT_FALSE(l.entry(4).writer.valid());
  l.set_written(8, 100, m);  // clamped to the volume
  EXPECT_EQ(l.runs().size(), 2u);
  EXPECT_TRUE(l.entry(9).writer.valid());
  EXPECT_THROW((void)l.entry(10), std::out_of_range);
  slice_ledger none(0);
  EXPECT_TRUE(none.runs().empty());
  none.set_all_written(m);
  EXPECT_TRUE(none.runs().empty());
}

// An op's ledger work grows with its slabs, not with the volume's slices: after per-slab ops on
// a 4096-slice volume the ledger holds one run per slab.
TEST(LedgerRuns, PerSlabOpsLeaveOneRunPerSlab) {
  vox::stream_set s(32);
  const vox::extent3 e{4, 4, 4096};
  vox::volume<float> a(s, e, 1.0f);
  vox::volume<float> b(s, e);
  EXPECT_EQ(a.ledger().runs().size(), 1u);
  const vox::exec::slab_fn noop = [](vox::stream_view, const vox::slab&) {};
  vox::exec::run_op(s, "copy", s.plan(e.z), {vox::read(a), vox::write(b)}, noop);
  EXPECT_EQ(b.ledger().runs().size(), 32u);
  EXPECT_EQ(a.ledger().runs().size(), 32u);  // 1 writer, a different reader per slab
  vox::exec::run_op(s, "halo", s.plan(e.z), {vox::read(b, 1), vox::write(a)}, noop);
  EXPECT_EQ(a.ledger().runs().size(), 32u);
  EXPECT_LE(b.ledger().runs().size(), 3u * 32u);  // halos split each slab's ends
  for (std::size_t z = 0; z < e.z; ++z)
    ASSERT_EQ(a.ledger().entry(z).writer.stream.get(), s.state(s.stream_for_slice(z, e.z)).get());
  s.synchronize();
}

}  // namespace voxtest_ledger_runs
