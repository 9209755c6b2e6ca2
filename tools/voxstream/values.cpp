// The tool's command-line value parsers (values.hpp).
#include "values.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "../../src/io/detail/text.hpp"

namespace vox::cli {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

}  // namespace

void bad_value(std::string_view what, std::string_view text, std::string_view why) {
  throw usage_error(std::string(what) + ": '" + std::string(text) + "': " + std::string(why));
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t p = s.find(sep, start);
    parts.push_back(s.substr(start, p == std::string_view::npos ? p : p - start));
    if (p == std::string_view::npos) break;
    start = p + 1;
  }
  return parts;
}

std::size_t parse_count(std::string_view text, std::string_view what) {
  std::uint64_t v = 0;
  const std::string_view t = io::detail::trim(text);
  if (!io::detail::parse_u64(t, v) ||
      v > static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max())) {
    const bool digits = !t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos;
    bad_value(what, text, digits ? "out of range (too large)" : "expected a whole number");
  }
  return static_cast<std::size_t>(v);
}

int parse_connectivity(std::string_view text, std::string_view what) {
  const std::size_t c = parse_count(text, what);
  if (c != 4 && c != 6 && c != 8 && c != 18 && c != 26)
    bad_value(what, text,
              "connectivity is 6, 18 or 26 (3D: faces, edges, corners), or 4 or 8 (within each "
              "z-slice)");
  return static_cast<int>(c);
}

extent3 parse_triple(std::string_view text, std::string_view what) {
  const auto parts = split(text, ',');
  if (parts.size() == 1) {
    const std::size_t s = parse_count(parts[0], what);
    return {s, s, s};
  }
  if (parts.size() != 3) bad_value(what, text, "expected one number or three (X,Y,Z)");
  return {parse_count(parts[0], what), parse_count(parts[1], what),
          parse_count(parts[2], what)};
}

std::size_t parse_bytes(std::string_view text) {
  const std::string_view what = "--budget";
  std::string_view t = io::detail::trim(text);
  std::size_t n = 0;
  while (n < t.size() && (std::isdigit(static_cast<unsigned char>(t[n])) || t[n] == '.')) ++n;
  if (n == 0) bad_value(what, text, "expected a size such as 512M, 2G or 1073741824");
  double v = 0;
  if (!io::detail::parse_double(t.substr(0, n), v) || !std::isfinite(v) || v < 0)
    bad_value(what, text, "expected a size such as 512M, 2G or 1073741824");
  std::string unit = lower(io::detail::trim(t.substr(n)));
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();  // "MB", "MiB", "B"
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();  // "Mi"
  double mult = 1;
  if (unit.empty()) {
    mult = 1;
  } else if (unit == "k") {
    mult = 1024.0;
  } else if (unit == "m") {
    mult = 1024.0 * 1024.0;
  } else if (unit == "g") {
    mult = 1024.0 * 1024.0 * 1024.0;
  } else if (unit == "t") {
    mult = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  } else {
    bad_value(what, text, "unknown unit (use K, M, G or T)");
  }
  const double bytes = std::floor(v * mult);
  if (!(bytes >= 1)) bad_value(what, text, "must be at least 1 byte");
  if (bytes >= 18446744073709551615.0) bad_value(what, text, "too large");
  return static_cast<std::size_t>(bytes);
}

std::string format_bytes(std::size_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  else
    std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : (v < 100 ? "%.1f %s" : "%.0f %s"), v,
                  units[u]);
  return buf;
}

dtype parse_dtype(std::string_view text, std::string_view what) {
  const std::string t = lower(io::detail::trim(text));
  if (t == "uint8" || t == "u8" || t == "uchar") return dtype::uint8;
  if (t == "uint16" || t == "u16" || t == "ushort") return dtype::uint16;
  if (t == "int16" || t == "i16" || t == "short") return dtype::int16;
  if (t == "int32" || t == "i32" || t == "int") return dtype::int32;
  if (t == "float32" || t == "f32" || t == "float") return dtype::float32;
  if (t == "float64" || t == "f64" || t == "double") return dtype::float64;
  bad_value(what, text, "expected uint8, uint16, int16, int32, float32 or float64");
}

projection_axis parse_axis(std::string_view text, std::string_view what) {
  const std::string t = lower(io::detail::trim(text));
  if (t == "x") return projection_axis::x;
  if (t == "y") return projection_axis::y;
  if (t == "z") return projection_axis::z;
  bad_value(what, text, "expected an axis: x, y or z");
}

extent3 parse_extent(std::string_view text, std::string_view what) {
  std::string t(io::detail::trim(text));
  for (char& c : t)
    if (c == 'x' || c == 'X') c = ',';
  const extent3 e = parse_triple(t, what);
  if (e.empty()) bad_value(what, text, "every size must be >= 1");
  return e;
}

double parse_number(std::string_view text, std::string_view what) {
  double v = 0;
  if (!io::detail::parse_double(io::detail::trim(text), v)) {
    // A number too large for a double (1e400) is out of range, not "not a number".
    const std::string t(io::detail::trim(text));
    char* end = nullptr;
    errno = 0;
    (void)std::strtod(t.c_str(), &end);
    if (!t.empty() && end == t.c_str() + t.size() && errno == ERANGE)
      bad_value(what, text, "out of range");
    bad_value(what, text, "expected a number");
  }
  if (!std::isfinite(v)) bad_value(what, text, "the number must be finite");
  return v;
}

std::pair<std::size_t, std::size_t> parse_index_range(std::string_view text,
                                                      std::string_view what) {
  const auto parts = split(text, ':');
  if (parts.size() != 2) bad_value(what, text, "expected A:B (slice indices, B excluded)");
  const std::size_t a = parse_count(parts[0], what);
  const std::size_t b = parse_count(parts[1], what);
  if (b <= a) bad_value(what, text, "an empty range: B must be above A");
  return {a, b};
}

std::pair<double, double> parse_range(std::string_view text, std::string_view what) {
  const auto parts = split(text, ':');
  if (parts.size() != 2) bad_value(what, text, "expected LO:HI");
  const double lo = parse_number(parts[0], what);
  const double hi = parse_number(parts[1], what);
  if (lo > hi) bad_value(what, text, "LO must not be above HI");
  return {lo, hi};
}

}  // namespace vox::cli
