// Shared helpers of the io tests: a temporary directory per test, seeded random volumes,
// bitwise comparison, whole-file read/write.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/io/format.hpp>
#include <voxstream/io/host_volume.hpp>

namespace vox_io_test {

namespace fs = std::filesystem;

/// A fresh directory for one test, removed afterwards.
class temp_dir_test : public ::testing::Test {
 public:
  [[nodiscard]] fs::path path(const std::string& name) const { return dir_ / name; }

 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    dir_ = fs::temp_directory_path() / ("voxstream_io_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  /// Names of the files in the directory (to find stray temporaries).
  [[nodiscard]] std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

/// Seeded random voxels covering the type's range; floats include NaN, infinities, -0 and
/// subnormals so that round trips are checked bit for bit.
template <class T>
void fill_random(vox::host_volume<T>& v, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  T* d = v.data();
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      std::uniform_real_distribution<T> u(T(-1000), T(1000));
      d[i] = u(rng);
    } else {
      std::uniform_int_distribution<long long> u(std::numeric_limits<T>::min(),
                                                 std::numeric_limits<T>::max());
      d[i] = static_cast<T>(u(rng));
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(),  std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(),  T(-0.0),
                          std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max()};
    for (std::size_t i = 0; i < sizeof specials / sizeof specials[0] && i < n; ++i)
      d[(i * 7919) % n] = specials[i];
  }
}

template <class T>
vox::host_volume<T> random_volume(vox::extent3 e, std::uint64_t seed) {
  vox::host_volume<T> v(e);
  fill_random(v, seed);
  return v;
}

template <class T>
::testing::AssertionResult same_voxels(const vox::host_volume<T>& a, const vox::host_volume<T>& b) {
  if (a.extent() != b.extent())
    return ::testing::AssertionFailure()
           << "extents " << a.extent().str() << " vs " << b.extent().str();
  if (std::memcmp(a.data(), b.data(), a.bytes()) != 0) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::memcmp(a.data() + i, b.data() + i, sizeof(T)) != 0)
        return ::testing::AssertionFailure()
               << "voxel " << i << " differs: " << +a.data()[i] << " vs " << +b.data()[i];
  }
  return ::testing::AssertionSuccess();
}

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The voxels of `v` as bytes in `order`.
template <class T>
std::string voxel_bytes(const vox::host_volume<T>& v, vox::io::byte_order order) {
  std::string s(reinterpret_cast<const char*>(v.data()), v.bytes());
  if (order != vox::io::native_byte_order && sizeof(T) > 1)
    for (std::size_t i = 0; i < s.size(); i += sizeof(T))
      std::reverse(s.begin() + static_cast<std::ptrdiff_t>(i),
                   s.begin() + static_cast<std::ptrdiff_t>(i + sizeof(T)));
  return s;
}

using voxel_types =
    ::testing::Types<std::uint8_t, std::uint16_t, std::int16_t, std::int32_t, float, double>;

}  // namespace vox_io_test
