#include <voxstream/core/extent.hpp>

#include <cstddef>
#include <limits>
#include <string>

#include <voxstream/core/error.hpp>

namespace vox {

std::string extent3::str() const {
  return std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
}

std::size_t checked_voxels(const extent3& e, std::size_t element_bytes, const char* op) {
  VOX_EXPECTS(!e.empty(), op, "empty extent " + e.str() + ": every dimension must be >= 1");
  const std::size_t limit =
      static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) /
      (element_bytes == 0 ? 1 : element_bytes);
  std::size_t n = e.x;
  for (std::size_t d : {e.y, e.z}) {
    VOX_EXPECTS(n <= limit / d, op,
                "extent " + e.str() + " overflows: the byte count does not fit in 63 bits");
    n *= d;
  }
  return n;
}

void expect_same_extent(const extent3& a, const extent3& b, const char* op) {
  VOX_EXPECTS(a == b, op, "extents differ: " + a.str() + " vs " + b.str());
}

}  // namespace vox
