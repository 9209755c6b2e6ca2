// Library safety (issue 18): reader marks of short-lived stream sets do not pile up in a volume's
// ledger, and a moved-from stream_set is rejected by every op with vox::invalid_argument before
// any work.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
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
#include <voxstream/volume/access.hpp>

#include "../common/random.hpp"

namespace safety_test {

using vox::extent3;

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  return vox_test::random_floats(n, seed, -20.0f, 90.0f);
}

/// A set without pinned staging (cheap to make many): on the CUDA backend it cannot move voxels
/// from or to pageable host memory, so the tests do that through a set with staging.
vox::stream_set small_set(std::size_t n) {
  vox::stream_set_options o;
  o.staging_buffers = 0;
  return vox::stream_set(n, o);
}

// 2,000 short-lived sets copy one volume: their reader marks (and streams) must not accumulate.
TEST(ReaderMarks, ShortLivedSetsLeaveABoundedNumber) {
  const extent3 e{9, 7, 12};
  vox::stream_set main(3);  // with staging: it moves the voxels from and to the host
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
      vox::download(main, out, got.data(), got.size());  // waits on s's copy (the ledger)
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
  // Their copies complete first (on a GPU shared with other processes a copy can take a while):
  // a retired set's reader is dropped only once its event is complete.
  for (auto& s : live) s.synchronize();
  live.erase(live.begin(), live.begin() + 3);  // three sets go away
  vox::stream_set last = small_set(1);
  vox::volume<float> out(last, e);
  vox::copy(last, in, out);
  // The two live sets and the new one remain.
  for (std::size_t z = 0; z < e.z; ++z) EXPECT_EQ(in.ledger().entry(z).readers.size(), 3u) << z;
}

// A moved-from set: every entry point throws vox::invalid_argument naming the problem, and
// nothing happens to the volumes.
class MovedFromSet : public ::testing::Test {
 protected:
  const extent3 e{11, 9, 8};
  vox::stream_set moved_from{3};  // with staging: `good` uploads from the host
  vox::stream_set good = std::move(moved_from);
  std::vector<float> h = random_floats(e.voxels(), 4242);
  vox::volume<float> in{good, e};
  vox::volume<float> out{good, e, 7.25f};

  void SetUp() override { vox::upload(good, h.data(), h.size(), in); }

  template <class F>
  void expect_rejected(F&& f, const char* what) {
    try {
      f();
      ADD_FAILURE() << what << ": no exception";
    } catch (const vox::invalid_argument& ex) {
      EXPECT_NE(std::string(ex.what()).find("moved from"), std::string::npos)
          << what << ": " << ex.what();
    } catch (const std::exception& ex) {
      ADD_FAILURE() << what << ": not a vox::invalid_argument: " << ex.what();
    }
    // Nothing was done: the volumes still hold what they held.
    std::vector<float> got(h.size());
    vox::download(good, in, got.data(), got.size());
    EXPECT_EQ(got, h) << what;
    EXPECT_EQ(static_cast<double>(vox::min_value(good, out).get()), 7.25) << what;
    EXPECT_EQ(static_cast<double>(vox::max_value(good, out).get()), 7.25) << what;
  }
};

TEST_F(MovedFromSet, EveryFamilyRejectsIt) {
  auto& s = moved_from;  // NOLINT(bugprone-use-after-move): that is the point
  EXPECT_EQ(s.size(), 0u);
  expect_rejected([&] { vox::fill(s, out, 1.0f); }, "fill");
  expect_rejected([&] { vox::copy(s, in, out); }, "copy");
  expect_rejected([&] { vox::multiply(s, in, 2.0, out); }, "multiply");
  expect_rejected([&] { (void)vox::sum(s, in); }, "sum");
  expect_rejected([&] { (void)vox::mean(s, in); }, "mean");
  expect_rejected([&] { (void)vox::min_value(s, in); }, "min_value");
  expect_rejected([&] { (void)vox::argmax(s, in); }, "argmax");
  expect_rejected([&] { (void)vox::statistics(s, in); }, "statistics");
  expect_rejected([&] { (void)vox::histogram(s, in, 16, -20.0, 90.0); }, "histogram");
  expect_rejected([&] { vox::uniform(s, in, out, vox::filter_size{3}); }, "uniform");
  expect_rejected([&] { vox::resize(s, in, out); }, "resize");
  expect_rejected(
      [&] {
        vox::volume<float> p(good, vox::projection_extent(e, vox::projection_axis::z));
        vox::max_projection(s, in, p);
      },
      "max_projection");
  expect_rejected([&] { vox::upload(s, h.data(), h.size(), out); }, "upload");
  expect_rejected(
      [&] {
        std::vector<float> got(h.size());
        vox::download(s, in, got.data(), got.size());
      },
      "download");
  expect_rejected([&] { vox::volume<float> v(s, e); }, "volume");
  expect_rejected([&] { (void)s.plan(8); }, "plan");
  expect_rejected([&] { (void)s.stream(0); }, "stream");
  expect_rejected([&] { (void)s.state(0); }, "state");
  expect_rejected([&] { s.synchronize(); }, "synchronize");
  expect_rejected(
      [&] {
        vox::exec::run_op(s, "op", std::vector<vox::slab>{{0, 0, 8}}, {vox::read(in)},
                          [](vox::stream_view, const vox::slab&) {});
      },
      "run_op");
}

// The set it was moved to works, and a set moved into again works.
TEST_F(MovedFromSet, TheTargetWorksAndAssigningRevivesIt) {
  vox::multiply(good, in, 2.0, out);
  std::vector<float> got(h.size());
  vox::download(good, out, got.data(), got.size());
  for (std::size_t i = 0; i < h.size(); ++i) ASSERT_EQ(got[i], h[i] * 2.0f) << i;
  moved_from = vox::stream_set(2);  // with staging: it downloads to the host below
  EXPECT_EQ(moved_from.size(), 2u);
  vox::copy(moved_from, in, out);
  vox::download(moved_from, out, got.data(), got.size());
  EXPECT_EQ(got, h);
}

}  // namespace safety_test
