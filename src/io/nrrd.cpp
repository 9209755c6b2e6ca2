#include "detail/nrrd.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "detail/fail.hpp"
#include "detail/text.hpp"

namespace vox::io::detail {

namespace {

constexpr const char* parse_op = "io::parse_nrrd_header";

struct type_alias {
  const char* name;
  int type;  // dtype index, or -1: a NRRD type voxstream does not support
};

// Every spelling teem accepts (nrrd/enumsNrrd.c), lower case.
constexpr std::array<type_alias, 35> type_aliases{{
    {"uchar", 0},
    {"unsigned char", 0},
    {"uint8", 0},
    {"uint8_t", 0},
    {"ushort", 1},
    {"unsigned short", 1},
    {"unsigned short int", 1},
    {"uint16", 1},
    {"uint16_t", 1},
    {"short", 2},
    {"short int", 2},
    {"signed short", 2},
    {"signed short int", 2},
    {"int16", 2},
    {"int16_t", 2},
    {"int", 3},
    {"signed int", 3},
    {"int32", 3},
    {"int32_t", 3},
    {"float", 4},
    {"double", 5},
    {"signed char", -1},
    {"int8", -1},
    {"int8_t", -1},
    {"uint", -1},
    {"unsigned int", -1},
    {"uint32", -1},
    {"uint32_t", -1},
    {"longlong", -1},
    {"long long", -1},
    {"long long int", -1},
    {"int64", -1},
    {"ulonglong", -1},
    {"uint64", -1},
    {"block", -1},
}};

std::string normalise(std::string_view s) {
  // Lower case, runs of blanks folded into one space: "unsigned  Char" -> "unsigned char".
  std::string r;
  for (const std::string_view w : split_ws(s)) {
    if (!r.empty()) r += ' ';
    for (char c : w) r += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return r;
}

std::string field_key(std::string_view s) {
  // Field identifiers without blanks, lower case: "data file" and "datafile" are the same field.
  std::string r;
  for (char c : s)
    if (c != ' ' && c != '\t') r += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

unsigned space_dimension_of(std::string_view name) {
  const std::string n = normalise(name);
  static const char* const three[] = {"right-anterior-superior",
                                      "ras",
                                      "left-anterior-superior",
                                      "las",
                                      "left-posterior-superior",
                                      "lps",
                                      "scanner-xyz",
                                      "3d-right-handed",
                                      "3d-left-handed"};
  static const char* const four[] = {"right-anterior-superior-time",
                                     "rast",
                                     "left-anterior-superior-time",
                                     "last",
                                     "left-posterior-superior-time",
                                     "lpst",
                                     "scanner-xyz-time",
                                     "3d-right-handed-time",
                                     "3d-left-handed-time"};
  for (const char* s : three)
    if (n == s) return 3;
  for (const char* s : four)
    if (n == s) return 4;
  return 0;
}

class parser {
 public:
  parser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  [[noreturn]] void fail(const std::string& what) const {
    VOX_IO_FAIL(parse_op, std::string(name_), what);
  }

  /// "(a,b,c)" with `n` components, at the start of `s`; advances `s` past it.
  std::vector<double> vector_at(std::string_view& s, unsigned n, const char* field) const {
    s = trim(s);
    if (s.empty() || s.front() != '(')
      fail(std::string("'") + field + "': expected a vector like (1,0,0), found '" + excerpt(s) +
           "'");
    const std::size_t close = s.find(')');
    if (close == std::string_view::npos) fail(std::string("'") + field + "': vector without ')'");
    std::string_view body = s.substr(1, close - 1);
    s.remove_prefix(close + 1);
    std::vector<double> v;
    while (true) {
      const std::size_t comma = body.find(',');
      double d = 0;
      if (!parse_double(body.substr(0, comma), d))
        fail(std::string("'") + field + "': bad number '" + excerpt(body.substr(0, comma)) + "'");
      v.push_back(d);
      if (v.size() > n) break;
      if (comma == std::string_view::npos) break;
      body.remove_prefix(comma + 1);
    }
    if (v.size() != n)
      fail(std::string("'") + field + "': a vector has " + std::to_string(v.size()) +
           " components, the space has " + std::to_string(n));
    return v;
  }

  parsed_header parse() {
    std::size_t pos = 0;
    bool at_end = false;
    const auto next_line = [&](std::string_view& line) {
      if (pos >= text_.size()) {
        at_end = true;
        return false;
      }
      const std::size_t nl = text_.find('\n', pos);
      const std::size_t end = nl == std::string_view::npos ? text_.size() : nl;
      line = text_.substr(pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      pos = nl == std::string_view::npos ? text_.size() : nl + 1;
      return true;
    };

    std::string_view line;
    if (!next_line(line) || line.size() != 8 || line.substr(0, 7) != "NRRD000" || line[7] < '1' ||
        line[7] > '5')
      fail("not a NRRD file: the first line is '" + excerpt(line) + "', not NRRD0001..NRRD0005");

    std::set<std::string> seen;
    bool terminated = false;
    std::optional<std::string_view> type, dimension, sizes, encoding_, endian, spacings, space,
        space_dimension, space_directions, space_origin, byte_skip, line_skip, data_file;
    unsigned line_no = 1;
    while (next_line(line)) {
      ++line_no;
      if (line.empty()) {
        terminated = true;
        break;
      }
      if (line.front() == '#') continue;
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos)
        fail("line " + std::to_string(line_no) + " is not 'field: value': '" + excerpt(line) + "'");
      if (colon + 1 < line.size() && line[colon + 1] == '=') continue;  // key:=value pairs
      const std::string key = field_key(line.substr(0, colon));
      const std::string_view value = trim(line.substr(colon + 1));
      if (key.empty()) fail("line " + std::to_string(line_no) + " has an empty field name");
      if (!seen.insert(key).second) fail("field '" + key + "' appears twice");
      if (key == "type")
        type = value;
      else if (key == "dimension")
        dimension = value;
      else if (key == "sizes")
        sizes = value;
      else if (key == "encoding")
        encoding_ = value;
      else if (key == "endian")
        endian = value;
      else if (key == "spacings")
        spacings = value;
      else if (key == "space")
        space = value;
      else if (key == "spacedimension")
        space_dimension = value;
      else if (key == "spacedirections")
        space_directions = value;
      else if (key == "spaceorigin")
        space_origin = value;
      else if (key == "byteskip")
        byte_skip = value;
      else if (key == "lineskip")
        line_skip = value;
      else if (key == "datafile")
        data_file = value;
      // Other fields (content, kinds, labels, units, min, max, centers, thicknesses, ...) carry
      // nothing voxstream keeps.
    }

    parsed_header ph;
    volume_info& info = ph.info;
    info.format = file_format::nrrd;
    ph.header_bytes = pos;
    if (!terminated && !data_file)
      fail("the header ends without the blank line that precedes its data (truncated?)");

    if (!type) fail("missing field 'type'");
    {
      const std::string t = normalise(*type);
      int idx = -2;
      for (const type_alias& a : type_aliases)
        if (t == a.name) idx = a.type;
      if (idx == -2) fail("unknown type '" + excerpt(*type) + "'");
      if (idx == -1)
        fail("type '" + t +
             "' is not supported (uint8, uint16, int16, int32, float and double are)");
      info.type = static_cast<dtype>(idx);
    }

    if (!dimension) fail("missing field 'dimension'");
    std::uint64_t dim = 0;
    if (!parse_u64(*dimension, dim) || dim == 0)
      fail("bad dimension '" + excerpt(*dimension) + "'");
    if (dim > 3) fail("dimension " + std::to_string(dim) + " is not supported (1, 2 or 3 are)");
    info.dimension = static_cast<unsigned>(dim);

    if (!sizes) fail("missing field 'sizes'");
    {
      const std::vector<std::string_view> w = split_ws(*sizes);
      if (w.size() != dim)
        fail("'sizes' has " + std::to_string(w.size()) + " values for dimension " +
             std::to_string(dim));
      std::array<std::uint64_t, 3> n{1, 1, 1};
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (!parse_u64(w[i], n[i]) || n[i] == 0) fail("bad size '" + excerpt(w[i]) + "'");
        if (n[i] > std::numeric_limits<std::size_t>::max())
          fail("size " + std::string(w[i]) + " is too large");
      }
      info.extent = extent3{static_cast<std::size_t>(n[0]), static_cast<std::size_t>(n[1]),
                            static_cast<std::size_t>(n[2])};
      check_extent(info.extent, info.type, parse_op, name_);
    }

    if (!encoding_) fail("missing field 'encoding'");
    {
      const std::string e = normalise(*encoding_);
      if (e == "raw")
        info.enc = encoding::raw;
      else if (e == "gzip" || e == "gz")
        info.enc = encoding::gzip;
      else if (e == "txt" || e == "text" || e == "ascii" || e == "hex" || e == "bz2" ||
               e == "bzip2" || e == "zrl")
        fail("encoding '" + e + "' is not supported (raw and gzip are)");
      else
        fail("unknown encoding '" + excerpt(*encoding_) + "'");
    }

    if (endian) {
      const std::string e = normalise(*endian);
      if (e == "little")
        info.order = byte_order::little;
      else if (e == "big")
        info.order = byte_order::big;
      else
        fail("bad endian '" + excerpt(*endian) + "'");
    } else if (dtype_size(info.type) > 1) {
      fail("missing field 'endian' (required for multi-byte types)");
    } else {
      info.order = native_byte_order;
    }

    // Space and spacing.
    unsigned sdim = 0;
    if (space) {
      sdim = space_dimension_of(*space);
      if (sdim == 0) fail("unknown space '" + excerpt(*space) + "'");
    }
    if (space_dimension) {
      std::uint64_t d = 0;
      if (!parse_u64(*space_dimension, d) || d == 0 || d > 16)
        fail("bad space dimension '" + excerpt(*space_dimension) + "'");
      if (space && d != sdim) fail("'space' and 'space dimension' disagree");
      sdim = static_cast<unsigned>(d);
    }
    std::array<double, 3> spacing{1.0, 1.0, 1.0};
    if (space_directions) {
      if (sdim == 0) fail("'space directions' without 'space' or 'space dimension'");
      std::string_view s = *space_directions;
      for (std::size_t i = 0; i < dim; ++i) {
        s = trim(s);
        if (s.substr(0, 4) == "none") {
          s.remove_prefix(4);
          continue;
        }
        const std::vector<double> v = vector_at(s, sdim, "space directions");
        double norm = 0;  // hypot: no overflow or underflow, and exact for one nonzero component
        for (double d : v) norm = std::hypot(norm, d);
        if (!std::isfinite(norm) || norm <= 0)
          fail("'space directions': axis " + std::to_string(i) + " has no finite, nonzero length");
        spacing[i] = norm;
      }
      if (!trim(s).empty())
        fail("'space directions' has more than " + std::to_string(dim) + " entries");
    } else if (spacings) {
      const std::vector<std::string_view> w = split_ws(*spacings);
      if (w.size() != dim)
        fail("'spacings' has " + std::to_string(w.size()) + " values for dimension " +
             std::to_string(dim));
      for (std::size_t i = 0; i < w.size(); ++i) {
        double d = 0;
        if (!parse_double(w[i], d)) fail("bad spacing '" + excerpt(w[i]) + "'");
        if (std::isnan(d)) continue;  // "nan": unknown
        if (!std::isfinite(d) || d == 0) fail("spacing '" + excerpt(w[i]) + "' is not usable");
        spacing[i] = std::fabs(d);
      }
    }
    info.spacing = vec3d{spacing[0], spacing[1], spacing[2]};
    if (space_origin) {
      if (sdim == 0) fail("'space origin' without 'space' or 'space dimension'");
      std::string_view s = *space_origin;
      const std::vector<double> v = vector_at(s, sdim, "space origin");
      if (!trim(s).empty()) fail("'space origin' has text after its vector");
      for (double d : v)
        if (!std::isfinite(d)) fail("'space origin' is not finite");
      info.origin = vec3d{v[0], sdim > 1 ? v[1] : 0.0, sdim > 2 ? v[2] : 0.0};
    }

    if (byte_skip) {
      std::int64_t b = 0;
      if (!parse_i64(*byte_skip, b) || b < -1) fail("bad byte skip '" + excerpt(*byte_skip) + "'");
      if (b == -1) {
        if (info.enc != encoding::raw) fail("'byte skip: -1' is only valid with raw encoding");
        ph.data_at_end = true;
      } else {
        ph.byte_skip = static_cast<std::uint64_t>(b);
      }
    }
    if (line_skip && !parse_u64(*line_skip, ph.line_skip))
      fail("bad line skip '" + excerpt(*line_skip) + "'");
    if (data_file) {
      const std::string_view d = *data_file;
      if (d.empty()) fail("empty 'data file'");
      const std::vector<std::string_view> w = split_ws(d);
      if (w.front() == "LIST") fail("'data file: LIST' (several data files) is not supported");
      if (w.size() >= 4 && w.front().find('%') != std::string_view::npos)
        fail("'data file' with a name pattern (several data files) is not supported");
      if (d.find('\0') != std::string_view::npos) fail("'data file' holds a NUL byte");
      ph.data_file = std::string(d);
    }
    return ph;
  }

 private:
  std::string_view text_;
  std::string_view name_;
};

const char* nrrd_type_name(dtype t) {
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
      return "float";
    case dtype::float64:
      return "double";
  }
  return "?";
}

}  // namespace

parsed_header parse_nrrd_header(std::string_view text, std::string_view name) {
  return parser(text, name).parse();
}

std::string format_nrrd_header(const volume_info& info, std::string_view data_file) {
  const auto& e = info.extent;
  const auto& s = info.spacing;
  const auto& o = info.origin;
  std::string h = "NRRD0004\n";
  h += "# Complete NRRD file format specification at:\n";
  h += "# http://teem.sourceforge.net/nrrd/format.html\n";
  h += "# written by voxstream\n";
  h += std::string("type: ") + nrrd_type_name(info.type) + "\n";
  h += "dimension: 3\n";
  h += "space dimension: 3\n";
  h += "sizes: " + std::to_string(e.x) + " " + std::to_string(e.y) + " " + std::to_string(e.z) +
       "\n";
  h += "space directions: (" + format_double(s.x) + ",0,0) (0," + format_double(s.y) + ",0) (0,0," +
       format_double(s.z) + ")\n";
  h += "kinds: domain domain domain\n";
  if (dtype_size(info.type) > 1)
    h += std::string("endian: ") + (info.order == byte_order::big ? "big" : "little") + "\n";
  h += std::string("encoding: ") + (info.enc == encoding::gzip ? "gzip" : "raw") + "\n";
  h += "space origin: (" + format_double(o.x) + "," + format_double(o.y) + "," +
       format_double(o.z) + ")\n";
  if (!data_file.empty()) h += "data file: " + std::string(data_file) + "\n";
  h += "\n";
  return h;
}

}  // namespace vox::io::detail
