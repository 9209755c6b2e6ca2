// Private to io: how io reports failures. Implemented in fail.cpp.
#pragma once

#include <string>

#include <voxstream/io/format.hpp>

namespace vox::io::detail {

/// The message of errno value `err`.
[[nodiscard]] std::string os_error(int err);

}  // namespace vox::io::detail
