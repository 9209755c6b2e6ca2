/// @file dtype.hpp
/// @brief vox::dtype: the six voxel types voxstream supports, as a value; their size, name and
///        C++ type (dtype_of<T>, visit_dtype).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vox {

/// @brief The voxel types voxstream supports, in the order of vox::io::any_host_volume.
enum class dtype : std::uint8_t { uint8, uint16, int16, int32, float32, float64 };

/// @brief Bytes per voxel of `t`.
[[nodiscard]] std::size_t dtype_size(dtype t) noexcept;
/// @brief "uint8", "uint16", "int16", "int32", "float32" or "float64".
[[nodiscard]] const char* dtype_name(dtype t) noexcept;

namespace detail {
template <class T>
struct dtype_traits;  // only the six voxel types have a dtype
template <>
struct dtype_traits<std::uint8_t> {
  static constexpr dtype value = dtype::uint8;
};
template <>
struct dtype_traits<std::uint16_t> {
  static constexpr dtype value = dtype::uint16;
};
template <>
struct dtype_traits<std::int16_t> {
  static constexpr dtype value = dtype::int16;
};
template <>
struct dtype_traits<std::int32_t> {
  static constexpr dtype value = dtype::int32;
};
template <>
struct dtype_traits<float> {
  static constexpr dtype value = dtype::float32;
};
template <>
struct dtype_traits<double> {
  static constexpr dtype value = dtype::float64;
};
}  // namespace detail

/// @brief The dtype of voxel type T (a compile error for other types).
template <class T>
inline constexpr dtype dtype_of = detail::dtype_traits<T>::value;

/// @brief A voxel type as a value: `typename decltype(tag)::type` is the type (see visit_dtype).
template <class T>
struct dtype_tag {
  using type = T;
};

/// @brief Calls `f(dtype_tag<T>{})` for the C++ voxel type T of `t` and returns what it returns
///        (every branch must return the same type). A value outside the enum counts as float64.
template <class F>
decltype(auto) visit_dtype(dtype t, F&& f) {
  switch (t) {
    case dtype::uint8:
      return f(dtype_tag<std::uint8_t>{});
    case dtype::uint16:
      return f(dtype_tag<std::uint16_t>{});
    case dtype::int16:
      return f(dtype_tag<std::int16_t>{});
    case dtype::int32:
      return f(dtype_tag<std::int32_t>{});
    case dtype::float32:
      return f(dtype_tag<float>{});
    case dtype::float64:
    default:
      return f(dtype_tag<double>{});
  }
}

}  // namespace vox
