#include <voxstream/ops/border.hpp>

namespace vox {

const char* border_name(border mode) noexcept {
  switch (mode) {
    case border::reflect:
      return "reflect";
    case border::nearest:
      return "nearest";
    case border::constant:
      return "constant";
    case border::wrap:
      return "wrap";
  }
  return "unknown";
}

}  // namespace vox
