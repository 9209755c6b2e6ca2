#include <voxstream/core/dtype.hpp>

#include <cstddef>

namespace vox {

std::size_t dtype_size(dtype t) noexcept {
  switch (t) {
    case dtype::uint8:
      return 1;
    case dtype::uint16:
      return 2;
    case dtype::int16:
      return 2;
    case dtype::int32:
      return 4;
    case dtype::float32:
      return 4;
    case dtype::float64:
      return 8;
  }
  return 0;
}

const char* dtype_name(dtype t) noexcept {
  switch (t) {
    case dtype::uint8:
      return "uint8";
    case dtype::uint16:
      return "uint16";
    case dtype::int16:
      return "int16";
    case dtype::int32:
      return "int32";
    case dtype::float32:
      return "float32";
    case dtype::float64:
      return "float64";
  }
  return "?";
}

}  // namespace vox
