// libFuzzer target: vox::io::detail::parse_nrrd_header / format_nrrd_header on arbitrary bytes
// (see fuzz/README.md).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../src/io/detail/nrrd.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace d = vox::io::detail;
  vox_fuzz::header_round_trip(
      data, size,
      [](std::string_view text, std::string_view name) { return d::parse_nrrd_header(text, name); },
      [](const d::parsed_header& ph) { return d::format_nrrd_header(ph.info, ph.data_file); });
  return 0;
}
