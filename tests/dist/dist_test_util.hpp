// Helpers shared by the tests of vox::dist: seeded data, host copies, poisoned halos, and the
// comparisons of partitioned results with the same op on the whole volume, through any transport
// and with partitions on given devices. Every helper that touches a partition makes its device
// current.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/dist/partitioned_volume.hpp>
#include <voxstream/voxstream.hpp>

#include "../common/random.hpp"

namespace vox_dist_test {

using vox::extent3;
using vox::stream_set;
using vox::volume;
using vox::dist::partitioned_volume;
using vox::dist::slice_range;

// Runs f, expects vox::invalid_argument whose message contains `what`.
template <class F>
void expect_invalid(F&& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "expected vox::invalid_argument containing '" << what << "'";
  } catch (const vox::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

template <class T>
std::vector<T> random_data(std::size_t n, unsigned seed) {
  if constexpr (std::is_floating_point<T>::value) {
    return vox_test::random_values<T, std::mt19937>(n, seed, -100.0, 100.0);
  } else {
    return vox_test::random_values<T, std::mt19937>(n, seed, std::is_signed<T>::value ? -30000 : 1,
                                                    30000);
  }
}

template <class T>
std::vector<T> host_of(stream_set& s, const volume<T>& v) {
  const vox::dist::device_scope on(s.device());
  std::vector<T> h(v.size());
  vox::download(s, v, h.data(), h.size());
  return h;
}

template <class T>
volume<T> device_of(stream_set& s, extent3 e, const std::vector<T>& h) {
  const vox::dist::device_scope on(s.device());
  volume<T> v(s, e);
  vox::upload(s, h.data(), h.size(), v);
  return v;
}

// Overwrites every halo slice of every partition with `value`.
template <class T>
void poison_halos(partitioned_volume<T>& pv, T value) {
  const std::size_t sv = pv.extent().slice_voxels();
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    auto h = host_of(pv.streams(p), pv.part(p));
    const slice_range own = pv.plan()[p].local_owned();
    for (std::size_t z = 0; z < pv.part(p).extent().z; ++z)
      if (z < own.z0 || z >= own.z1)
        std::fill(h.begin() + static_cast<std::ptrdiff_t>(z * sv),
                  h.begin() + static_cast<std::ptrdiff_t>((z + 1) * sv), value);
    const vox::dist::device_scope on(pv.device(p));
    vox::upload(pv.streams(p), h.data(), h.size(), pv.part(p));
  }
}

// Each partition's volume holds exactly the global slices plan()[p].held of `global`.
template <class T>
void expect_parts_hold(partitioned_volume<T>& pv, const std::vector<T>& global) {
  const std::size_t sv = pv.extent().slice_voxels();
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    const auto h = host_of(pv.streams(p), pv.part(p));
    const std::size_t g0 = pv.plan()[p].held.z0 * sv;
    ASSERT_EQ(h.size(), pv.plan()[p].held.depth() * sv);
    for (std::size_t i = 0; i < h.size(); ++i)
      ASSERT_EQ(h[i], global[g0 + i]) << "partition " << p << " local voxel " << i;
  }
}

// P partitions on the current device.
inline std::vector<int> on_current_device(std::size_t P) {
  return std::vector<int>(P, vox::detail::current_device("test"));
}

inline std::string devices_str(const std::vector<int>& d) {
  std::string s;
  for (int x : d) s += (s.empty() ? "" : ",") + std::to_string(x);
  return "devices {" + s + "}";
}

// The same filter on the whole volume and on partitions on `devices` (halos poisoned before
// apply, which exchanges them through `t`) gives bit-identical owned slices.
template <class T, class Out, class Op>
void expect_filter_matches(const std::vector<int>& devices, std::size_t h, std::size_t radius,
                           extent3 e, unsigned seed, Op op, vox::dist::transport& t) {
  SCOPED_TRACE(devices_str(devices) + " " + e.str() + " " + t.name());
  const auto data = random_data<T>(e.voxels(), seed);
  stream_set whole(3);
  volume<T> in = device_of(whole, e, data);
  volume<Out> out(whole, e, Out{0});
  op(whole, static_cast<const volume<T>&>(in), out);
  const auto want = host_of(whole, out);

  auto pin = partitioned_volume<T>::on_devices(devices, 2, e, h);
  auto pout = partitioned_volume<Out>::on_devices(devices, 2, e, h);
  pin.scatter(data.data(), data.size());
  poison_halos(pin, static_cast<T>(std::is_floating_point<T>::value ? 1.0e6 : 9999));
  vox::dist::apply(pin, pout, radius, op, t);
  std::vector<Out> got(e.voxels(), Out{123});
  pout.gather(got.data(), got.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "voxel " << i << " (z " << i / e.slice_voxels() << ")";
}

// P partitions on the current device, halos through a copy_transport.
template <class T, class Out, class Op>
void expect_filter_matches(std::size_t P, std::size_t h, std::size_t radius, extent3 e,
                           unsigned seed, Op op) {
  vox::dist::copy_transport t;
  expect_filter_matches<T, Out>(on_current_device(P), h, radius, e, seed, op, t);
}

// Histogram, min, max, z-projection and sum of partitions on `devices`, combined through `t`,
// equal the whole-volume ops; halos are poisoned so that counting them would show.
template <class T>
void expect_combines_match(const std::vector<int>& devices, extent3 e, unsigned seed,
                           vox::dist::transport& t) {
  SCOPED_TRACE(devices_str(devices) + " " + e.str() + " " + t.name());
  auto data = random_data<T>(e.voxels(), seed);
  if constexpr (std::is_floating_point<T>::value) {
    data[e.voxels() / 3] = std::numeric_limits<T>::quiet_NaN();  // ignored by min/max/projection
  }
  stream_set whole(2);
  volume<T> in = device_of(whole, e, data);
  const T want_min = vox::min_value(whole, in).get();
  const T want_max = vox::max_value(whole, in).get();
  volume<T> proj(whole, {e.x, e.y, 1});
  vox::max_projection(whole, in, proj, vox::projection_axis::z);
  const auto want_proj = host_of(whole, proj);

  // Ranges that cut off some voxels at both ends.
  const double hlo = std::is_floating_point<T>::value ? -90.0
                     : std::is_signed<T>::value       ? -25000.0
                                                      : 3.0;
  const double hhi = std::is_floating_point<T>::value ? 95.0
                     : std::is_signed<T>::value       ? 28000.0
                                                      : 250.0;
  const auto want_hist = vox::histogram(whole, in, 37, hlo, hhi).counts();

  auto pv = partitioned_volume<T>::on_devices(devices, 2, e, 2);
  pv.scatter(data.data(), data.size());
  // Halos are counted once, by their owner, even when they hold other values (in range here).
  poison_halos(pv, T{7});
  const auto got_hist = vox::dist::histogram(pv, 37, hlo, hhi, t);
  EXPECT_EQ(got_hist, want_hist);
  std::uint64_t counted = 0;
  for (auto c : got_hist) counted += c;
  EXPECT_GT(counted, 0u);
  // Halos are copies: combines must use owned slices only, so extreme halos must not show.
  poison_halos(pv, std::numeric_limits<T>::max());
  EXPECT_EQ(vox::dist::max_value(pv, t), want_max);
  volume<T> got_proj = [&] {  // on partition 0's device
    const vox::dist::device_scope on(pv.device(0));
    return volume<T>(pv.streams(0), {e.x, e.y, 1}, T{5});
  }();
  vox::dist::max_projection_z(pv, got_proj, t);
  EXPECT_EQ(host_of(pv.streams(0), got_proj), want_proj);
  poison_halos(pv, std::numeric_limits<T>::lowest());
  EXPECT_EQ(vox::dist::min_value(pv, t), want_min);

  if constexpr (std::is_floating_point<T>::value) {
    data[e.voxels() / 3] = T{1};
    volume<T> in2 = device_of(whole, e, data);
    const double want_sum = vox::sum(whole, in2).get();
    pv.scatter(data.data(), data.size());
    const double got = vox::dist::sum(pv, t);
    // Against a double host reference: both sums are exact for doubles up to rounding; for float
    // voxels the GPU's vox::sum adds pairs of floats before accumulating in double (reduce.hpp),
    // so each is within a few float roundings of the magnitudes.
    long double ref = 0, mag = 0;
    for (const T v : data) {
      if (std::isnan(static_cast<double>(v))) continue;
      ref += v;
      mag += std::abs(static_cast<long double>(v));
    }
    const double tol =
        (std::is_same<T, float>::value ? 1e-6 : 1e-12) * static_cast<double>(mag) + 1e-9;
    if (!std::isnan(want_sum)) {
      EXPECT_NEAR(want_sum, static_cast<double>(ref), tol);
      EXPECT_NEAR(got, static_cast<double>(ref), tol);
    } else {
      EXPECT_TRUE(std::isnan(got));
    }
    EXPECT_NE(got, 0.0);
  } else {
    const auto want_sum = vox::sum(whole, in).get();
    EXPECT_EQ(vox::dist::sum(pv, t), want_sum);
    EXPECT_NE(want_sum, 0);
  }
}

// P partitions on the current device, combined through a copy_transport.
template <class T>
void expect_combines_match(std::size_t P, extent3 e, unsigned seed) {
  vox::dist::copy_transport t;
  expect_combines_match<T>(on_current_device(P), e, seed, t);
}

// The uint8, int16, float and double combines for each number of partitions P in `counts`, the
// device of partition p being devices_for(P)[p].
template <class DevicesFor>
void expect_all_combines_match(DevicesFor devices_for, vox::dist::transport& t,
                               const std::vector<std::size_t>& counts = {1, 2, 3, 4}) {
  for (std::size_t P : counts) {
    const std::vector<int> d = devices_for(P);
    expect_combines_match<float>(d, {11, 7, 13}, 80 + static_cast<unsigned>(P), t);
    expect_combines_match<double>(d, {5, 9, 10}, 90 + static_cast<unsigned>(P), t);
    expect_combines_match<std::int16_t>(d, {6, 6, 9}, 100 + static_cast<unsigned>(P), t);
    expect_combines_match<std::uint8_t>(d, {17, 3, 8}, 110 + static_cast<unsigned>(P), t);
  }
}

}  // namespace vox_dist_test
