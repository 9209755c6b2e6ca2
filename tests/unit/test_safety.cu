// Library safety (issue 18): reader marks of short-lived stream sets do not pile up in a volume's
// ledger.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/access.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/geometry.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/projection.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume.hpp>

namespace safety_test {

using vox::extent3;

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-20.0f, 90.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

vox::stream_set small_set(std::size_t n) {
  vox::stream_set_options o;
  o.staging_buffers = 0;  // cheap to make many
  return vox::stream_set(n, o);
}

// 2,000 short-lived sets copy one volume: their reader marks (and streams) must not accumulate.
TEST(ReaderMarks, ShortLivedSetsLeaveABoundedNumber) {
  const extent3 e{9, 7, 12};
  vox::stream_set main = small_set(3);
  const auto h = random_floats(e.voxels(), 77);
  vox::volume<float> in(main, e);
  vox::upload(main, h.data(), h.size(), in);
  std::weak_ptr<vox::exec::stream_state> first_gone;
  std::size_t most = 0;
  for (std::size_t i = 0; i < 2000; ++i) {
    vox::stream_set s = small_set(1 + i % 4);
    vox::volume<float> out(s, e);
    vox::copy(s, in, out);
    if (i == 0) first_gone = s.state(0);
    if (i % 499 == 0) {  // the copies are right
      std::vector<float> got(h.size());
      vox::download(s, out, got.data(), got.size());
      ASSERT_EQ(got, h) << i;
    }
    most = std::max(most, in.ledger().marks());
  }
  // Live marks: per run one writer and the readers of the set alive at the time (<= 4 streams),
  // and runs are bounded by the slab boundaries of 1..4 streams over 12 slices.
  EXPECT_LE(most, 12u * (1u + 4u));
  EXPECT_LE(in.ledger().marks(), 12u * (1u + 4u));
  std::size_t readers = 0;
  for (const auto& r : in.ledger().runs()) readers += r.entry.readers.size();
  EXPECT_LE(readers, 12u * 4u);
  // The first set's streams are not kept alive by the volume.
  EXPECT_TRUE(first_gone.expired());
  // Dropping marks changes nothing that matters: a write after all those reads is still right.
  const auto h2 = random_floats(e.voxels(), 78);
  vox::upload(main, h2.data(), h2.size(), in);
  std::vector<float> got(h2.size());
  vox::download(main, in, got.data(), got.size());
  EXPECT_EQ(got, h2);
}

// Readers from a live set are kept: pruning only drops marks of sets that are gone.
TEST(ReaderMarks, LiveSetsKeepTheirReaders) {
  const extent3 e{5, 4, 6};
  vox::stream_set main = small_set(1);
  vox::volume<float> in(main, e, 3.5f);
  std::vector<vox::stream_set> live;
  for (std::size_t i = 0; i < 5; ++i) live.push_back(small_set(1));
  for (auto& s : live) {
    vox::volume<float> out(s, e);
    vox::copy(s, in, out);
  }
  for (std::size_t z = 0; z < e.z; ++z) EXPECT_EQ(in.ledger().entry(z).readers.size(), 5u) << z;
  live.erase(live.begin(), live.begin() + 3);  // three sets go away
  vox::stream_set last = small_set(1);
  vox::volume<float> out(last, e);
  vox::copy(last, in, out);
  // The two live sets and the new one remain.
  for (std::size_t z = 0; z < e.z; ++z) EXPECT_EQ(in.ledger().entry(z).readers.size(), 3u) << z;
}

}  // namespace safety_test
