// Shared by the header fuzzers: the invariants every accepted header must satisfy.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <voxstream/io/format.hpp>

#include "../src/io/detail/header.hpp"

namespace vox_fuzz {

namespace io = vox::io;
namespace d = vox::io::detail;

/// Aborts (a crash for libFuzzer) with `what` unless `ok`.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

/// Parses a header voxstream itself formatted: refusing it is a bug, so it aborts.
template <class Parse>
d::parsed_header reparse(Parse parse, const std::string& text) {
  try {
    return parse(text, "again");
  } catch (const io::io_error& e) {
    std::fprintf(stderr, "invariant violated: the formatted header is refused: %s\n--\n%s--\n",
                 e.what(), text.c_str());
    std::abort();
  }
}

/// The parsed description must survive format -> parse unchanged.
inline void require_same(const io::volume_info& a, const io::volume_info& b) {
  require(a.extent == b.extent, "extent changed by format/parse");
  require(a.type == b.type, "type changed by format/parse");
  require(a.spacing == b.spacing, "spacing changed by format/parse");
  require(a.origin == b.origin, "origin changed by format/parse");
  require(a.enc == b.enc, "encoding changed by format/parse");
  require(vox::dtype_size(a.type) == 1 || a.order == b.order, "byte order changed by format/parse");
}

/// Decodes the attached voxels of `ph` (parsed from `file`) when they are few enough; refusing
/// them (truncated, corrupt) is fine.
inline void decode_small(const d::parsed_header& ph, std::string_view file) {
  if (!ph.data_file.empty() || ph.info.data_bytes() > (std::uint64_t{1} << 20)) return;
  try {
    io::volume_info info;
    const std::string_view payload = d::attached_payload(ph, file, info, "fuzz");
    std::vector<unsigned char> out(static_cast<std::size_t>(info.data_bytes()));
    d::decode_payload(info, payload, out.data(), out.size(), "fuzz");
  } catch (const io::io_error&) {}
}

/// One fuzz input through a header parser and formatter: parse; if accepted, format it again,
/// which must parse back to the same description; then decode small attached payloads.
template <class Parse, class Format>
void header_round_trip(const std::uint8_t* data, std::size_t size, Parse parse, Format format) {
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  d::parsed_header ph;
  try {
    ph = parse(file, "fuzz");
  } catch (const io::io_error&) {
    return;  // refusing malformed input is the expected outcome
  }
  require(ph.header_bytes <= size, "header_bytes beyond the input");
  const std::string again = format(ph);
  const d::parsed_header ph2 = reparse(parse, again);
  require_same(ph.info, ph2.info);
  require(ph2.header_bytes == again.size(), "formatted header not parsed to its end");
  require(ph2.data_file == ph.data_file, "data file changed by format/parse");
  decode_small(ph, file);
}

}  // namespace vox_fuzz
