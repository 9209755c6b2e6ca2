// libFuzzer target: TIFF stacks held in memory through vox::io::detail::probe_tiff_memory and
// read_tiff_memory (libtiff underneath; see fuzz/README.md).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "../src/io/detail/tiff.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace d = vox::io::detail;
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  try {
    const vox::io::volume_info info = d::probe_tiff_memory(file, "fuzz.tif");
    vox_fuzz::require(!info.extent.empty(), "empty extent accepted");
    if (info.data_bytes() > (std::uint64_t{1} << 22)) return 0;
    std::vector<unsigned char> out(static_cast<std::size_t>(info.data_bytes()));
    d::read_tiff_memory(file, info, out.data(), out.size(), "fuzz.tif");
  } catch (const vox::io::io_error&) {
    // Refusing malformed input is the expected outcome.
  }
  return 0;
}
