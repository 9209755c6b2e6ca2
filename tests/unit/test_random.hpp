// Seeded random inputs shared by the unit tests (never all zeros).
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace vox_test {

/// n floats uniform in [lo, hi) from a std::mt19937 seeded with `seed`.
inline std::vector<float> random_floats(std::size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace vox_test
