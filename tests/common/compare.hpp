// Comparisons of op results with host references, and the voxel types the typed tests run on,
// for the tests of every folder.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/core/extent.hpp>

namespace vox_test {

/// The voxel types of the typed tests.
using voxel_types =
    ::testing::Types<std::uint8_t, std::uint16_t, std::int16_t, std::int32_t, float, double>;

/// Readable names of voxel_types for TYPED_TEST_SUITE's third argument.
struct type_names {
  template <class T>
  static std::string GetName(int) {
    if (std::is_same_v<T, std::uint8_t>) return "uint8";
    if (std::is_same_v<T, std::uint16_t>) return "uint16";
    if (std::is_same_v<T, std::int16_t>) return "int16";
    if (std::is_same_v<T, std::int32_t>) return "int32";
    if (std::is_same_v<T, float>) return "float";
    return "double";
  }
};

/// "(x, y, z)" of linear voxel index i in extent e.
inline std::string at(const vox::extent3& e, std::size_t i) {
  const std::size_t x = i % e.x, y = (i / e.x) % e.y, z = i / e.slice_voxels();
  return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")";
}

/// |got - want| <= tol (exact when tol is 0; NaN never passes); reports the first differences.
template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double tol,
                  const vox::extent3& e) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(d <= tol) && ++bad <= 5)
      ADD_FAILURE() << "voxel " << at(e, i) << " of " << e.str() << ": got " << +got[i] << ", want "
                    << want[i] << " (tolerance " << tol << ")";
  }
  EXPECT_EQ(bad, 0u) << "of " << got.size() << " voxels";
}

/// |got[k] - want[k]| <= rel * (1 + |want[k]|) for every k of want; says how many voxels are
/// wrong and which is the first.
inline ::testing::AssertionResult near(const float* got, const std::vector<float>& want,
                                       double rel) {
  std::size_t bad = 0, first = 0;
  for (std::size_t k = 0; k < want.size(); ++k) {
    const double tol = rel * (1.0 + std::fabs(static_cast<double>(want[k])));
    if (!(std::fabs(static_cast<double>(got[k]) - static_cast<double>(want[k])) <= tol) &&
        bad++ == 0)
      first = k;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << want.size() << " voxels wrong; first at "
                                       << first << ": " << got[first] << " vs " << want[first];
}

/// As above, and the sizes must agree.
inline ::testing::AssertionResult near(const std::vector<float>& got,
                                       const std::vector<float>& want, double rel) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  return near(got.data(), want, rel);
}

}  // namespace vox_test
