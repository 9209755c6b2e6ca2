// Private to io (the voxstream tool uses it too): locale-independent text helpers, shared by the
// header parsers and the format names. Implemented in text.cpp.
#pragma once

#include <string>
#include <string_view>

#include <voxstream/io/format.hpp>

namespace vox::io::detail {

/// `s` in ASCII lower case.
[[nodiscard]] std::string lower(std::string_view s);

}  // namespace vox::io::detail
