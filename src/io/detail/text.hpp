// Private to io (the voxstream tool uses it too): locale-independent text helpers, shared by the
// header parsers and the format names. Implemented in text.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vox::io::detail {

[[nodiscard]] std::string_view trim(std::string_view s) noexcept;
[[nodiscard]] bool iequals(std::string_view a, std::string_view b) noexcept;
[[nodiscard]] std::vector<std::string_view> split_ws(std::string_view s);
/// @brief `s` in ASCII lower case.
[[nodiscard]] std::string lower(std::string_view s);
[[nodiscard]] bool parse_u64(std::string_view s, std::uint64_t& out) noexcept;
[[nodiscard]] bool parse_i64(std::string_view s, std::int64_t& out) noexcept;
/// @brief Parses a double ("nan", "inf" and a leading '+' accepted), the whole of `s`.
[[nodiscard]] bool parse_double(std::string_view s, double& out) noexcept;
/// @brief The shortest text that parses back to exactly `v`.
[[nodiscard]] std::string format_double(double v);
/// @brief At most `n` characters of `s`, printable, for messages.
[[nodiscard]] std::string excerpt(std::string_view s, std::size_t n = 60);

}  // namespace vox::io::detail
