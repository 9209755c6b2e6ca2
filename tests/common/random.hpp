// Seeded random inputs shared by the tests of every folder (tests/unit, ops, stream, dist, ...).
// Each generator is a pure function of its arguments, so a test's inputs depend only on its seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <voxstream/core/extent.hpp>

namespace vox_test {

/// n floats uniform in [lo, hi) from a std::mt19937 seeded with `seed`.
inline std::vector<float> random_floats(std::size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

/// n voxels of T from an Engine seeded with `seed`: floating-point types uniform in [lo, hi)
/// (drawn as double), integers uniform in [lo, hi] (drawn as long long, then cast to T).
template <class T, class Engine = std::mt19937_64>
std::vector<T> random_values(std::size_t n, unsigned seed, double lo, double hi) {
  Engine rng(seed);
  std::vector<T> v(n);
  if constexpr (std::is_floating_point<T>::value) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& x : v) x = static_cast<T>(d(rng));
  } else {
    std::uniform_int_distribution<long long> d(static_cast<long long>(lo),
                                               static_cast<long long>(hi));
    for (auto& x : v) x = static_cast<T>(d(rng));
  }
  return v;
}

/// As random_values, integers over the whole range of T, floating-point types in
/// [float_lo, float_hi).
template <class T, class Engine = std::mt19937_64>
std::vector<T> full_range_values(std::size_t n, unsigned seed, double float_lo, double float_hi) {
  if constexpr (std::is_floating_point<T>::value) {
    return random_values<T, Engine>(n, seed, float_lo, float_hi);
  } else {
    return random_values<T, Engine>(n, seed, static_cast<double>(std::numeric_limits<T>::lowest()),
                                    static_cast<double>(std::numeric_limits<T>::max()));
  }
}

/// The voxels of a volume of extent e: floating-point types in [-100, 100), integers over their
/// whole range except int32, which stays within +-2^30 (sums of a few voxels do not overflow).
template <class T>
std::vector<T> random_voxels(const vox::extent3& e, std::uint32_t seed) {
  constexpr bool narrow = std::is_same<T, std::int32_t>::value;
  if constexpr (std::is_floating_point<T>::value || !narrow) {
    return full_range_values<T>(e.voxels(), seed, -100.0, 100.0);
  } else {
    return random_values<T>(e.voxels(), seed, -1073741824.0, 1073741824.0);
  }
}

}  // namespace vox_test
