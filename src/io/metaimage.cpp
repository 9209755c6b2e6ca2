#include "detail/metaimage.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "detail/fail.hpp"
#include "detail/text.hpp"

namespace vox::io::detail {

namespace {

constexpr const char* parse_op = "io::parse_metaimage_header";

std::string upper(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

class parser {
 public:
  parser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  [[noreturn]] void fail(const std::string& what) const {
    VOX_IO_FAIL(parse_op, std::string(name_), what);
  }

  bool boolean(std::string_view v, const char* key) const {
    if (iequals(v, "true") || v == "1") return true;
    if (iequals(v, "false") || v == "0") return false;
    fail(std::string(key) + " must be True or False, not '" + excerpt(v) + "'");
  }

  std::array<double, 3> doubles(std::string_view v, std::size_t n, const char* key,
                                bool positive) const {
    const std::vector<std::string_view> w = split_ws(v);
    if (w.size() != n)
      fail(std::string(key) + " has " + std::to_string(w.size()) + " values for NDims " +
           std::to_string(n));
    std::array<double, 3> out{positive ? 1.0 : 0.0, positive ? 1.0 : 0.0, positive ? 1.0 : 0.0};
    for (std::size_t i = 0; i < n; ++i) {
      if (!parse_double(w[i], out[i]) || !std::isfinite(out[i]))
        fail(std::string(key) + ": bad number '" + excerpt(w[i]) + "'");
      if (positive) {
        out[i] = std::fabs(out[i]);
        if (out[i] == 0) fail(std::string(key) + " must not be 0");
      }
    }
    return out;
  }

  parsed_header parse() {
    parsed_header ph;
    volume_info& info = ph.info;
    info.format = file_format::metaimage;
    std::optional<std::string_view> ndims, dim_size, element_type, spacing, size, offset, binary,
        msb, compressed, compressed_size, channels, header_size, data_file, object_type;
    std::set<std::string> seen;
    std::size_t pos = 0;
    unsigned line_no = 0;
    while (!data_file) {
      if (pos >= text_.size()) fail("the header ends without 'ElementDataFile' (truncated?)");
      const std::size_t nl = text_.find('\n', pos);
      const std::size_t end = nl == std::string_view::npos ? text_.size() : nl;
      std::string_view line = text_.substr(pos, end - pos);
      pos = nl == std::string_view::npos ? text_.size() : nl + 1;
      ++line_no;
      if (trim(line).empty()) continue;
      const std::size_t eq = line.find('=');
      if (eq == std::string_view::npos)
        fail("line " + std::to_string(line_no) + " is not 'Key = Value': '" + excerpt(line) + "'");
      const std::string key = upper(trim(line.substr(0, eq)));
      const std::string_view value = trim(line.substr(eq + 1));
      if (key.empty()) fail("line " + std::to_string(line_no) + " has an empty key");
      std::string canon = key;
      if (key == "ORIGIN" || key == "POSITION") canon = "OFFSET";
      if (key == "ELEMENTBYTEORDERMSB") canon = "BINARYDATABYTEORDERMSB";
      if (!seen.insert(canon).second) fail("key '" + key + "' appears twice (or an alias of it)");
      if (canon == "OBJECTTYPE")
        object_type = value;
      else if (canon == "NDIMS")
        ndims = value;
      else if (canon == "DIMSIZE")
        dim_size = value;
      else if (canon == "ELEMENTTYPE")
        element_type = value;
      else if (canon == "ELEMENTSPACING")
        spacing = value;
      else if (canon == "ELEMENTSIZE")
        size = value;
      else if (canon == "OFFSET")
        offset = value;
      else if (canon == "BINARYDATA")
        binary = value;
      else if (canon == "BINARYDATABYTEORDERMSB")
        msb = value;
      else if (canon == "COMPRESSEDDATA")
        compressed = value;
      else if (canon == "COMPRESSEDDATASIZE")
        compressed_size = value;
      else if (canon == "ELEMENTNUMBEROFCHANNELS")
        channels = value;
      else if (canon == "HEADERSIZE")
        header_size = value;
      else if (canon == "ELEMENTDATAFILE")
        data_file = value;
      // Other keys (TransformMatrix, CenterOfRotation, AnatomicalOrientation, Comment, ...)
      // carry nothing voxstream keeps.
    }
    ph.header_bytes = pos;

    if (object_type && !iequals(*object_type, "Image"))
      fail("ObjectType '" + excerpt(*object_type) + "' is not Image");
    if (!ndims) fail("missing NDims");
    std::uint64_t nd = 0;
    if (!parse_u64(*ndims, nd) || nd == 0) fail("bad NDims '" + excerpt(*ndims) + "'");
    if (nd > 3) fail("NDims " + std::to_string(nd) + " is not supported (1, 2 or 3 are)");
    info.dimension = static_cast<unsigned>(nd);

    if (!element_type) fail("missing ElementType");
    {
      const std::string t = upper(*element_type);
      if (t == "MET_UCHAR")
        info.type = dtype::uint8;
      else if (t == "MET_USHORT")
        info.type = dtype::uint16;
      else if (t == "MET_SHORT")
        info.type = dtype::int16;
      else if (t == "MET_INT")
        info.type = dtype::int32;
      else if (t == "MET_FLOAT")
        info.type = dtype::float32;
      else if (t == "MET_DOUBLE")
        info.type = dtype::float64;
      else if (t.rfind("MET_", 0) == 0)
        fail("ElementType " + excerpt(t) +
             " is not supported (MET_UCHAR, MET_USHORT, MET_SHORT, MET_INT, MET_FLOAT and "
             "MET_DOUBLE are)");
      else
        fail("unknown ElementType '" + excerpt(*element_type) + "'");
    }

    if (!dim_size) fail("missing DimSize");
    {
      const std::vector<std::string_view> w = split_ws(*dim_size);
      if (w.size() != nd)
        fail("DimSize has " + std::to_string(w.size()) + " values for NDims " + std::to_string(nd));
      std::array<std::uint64_t, 3> n{1, 1, 1};
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (!parse_u64(w[i], n[i]) || n[i] == 0) fail("bad DimSize value '" + excerpt(w[i]) + "'");
        if (n[i] > std::numeric_limits<std::size_t>::max()) fail("DimSize value too large");
      }
      info.extent = extent3{static_cast<std::size_t>(n[0]), static_cast<std::size_t>(n[1]),
                            static_cast<std::size_t>(n[2])};
      check_extent(info.extent, info.type, parse_op, name_);
    }

    if (channels) {
      std::uint64_t c = 0;
      if (!parse_u64(*channels, c) || c != 1)
        fail("ElementNumberOfChannels " + excerpt(*channels) +
             " is not supported (one channel is)");
    }
    if (binary && !boolean(*binary, "BinaryData"))
      fail("BinaryData = False (ASCII voxels) is not supported");
    info.order =
        msb && boolean(*msb, "BinaryDataByteOrderMSB") ? byte_order::big : byte_order::little;
    info.enc =
        compressed && boolean(*compressed, "CompressedData") ? encoding::gzip : encoding::raw;
    if (compressed_size) {
      if (!parse_u64(*compressed_size, info.compressed_bytes))
        fail("bad CompressedDataSize '" + excerpt(*compressed_size) + "'");
    }

    const std::array<double, 3> sp = spacing ? doubles(*spacing, nd, "ElementSpacing", true)
                                     : size  ? doubles(*size, nd, "ElementSize", true)
                                             : std::array<double, 3>{1.0, 1.0, 1.0};
    info.spacing = vec3d{sp[0], sp[1], sp[2]};
    if (offset) {
      const std::array<double, 3> o = doubles(*offset, nd, "Offset", false);
      info.origin = vec3d{o[0], o[1], o[2]};
    }

    if (header_size) {
      std::int64_t h = 0;
      if (!parse_i64(*header_size, h) || h < -1)
        fail("bad HeaderSize '" + excerpt(*header_size) + "'");
      if (h == -1) {
        if (info.enc != encoding::raw) fail("HeaderSize = -1 needs uncompressed data");
        ph.data_at_end = true;
      } else {
        ph.byte_skip = static_cast<std::uint64_t>(h);
        if (info.enc != encoding::raw && h > 0)
          fail("HeaderSize with compressed data is not supported");
      }
    }

    const std::string_view df = *data_file;
    if (df.empty()) fail("empty ElementDataFile");
    if (iequals(df, "LOCAL")) {
      ph.data_file.clear();
    } else {
      const std::vector<std::string_view> w = split_ws(df);
      if (iequals(w.front(), "LIST"))
        fail("ElementDataFile = LIST (one file per slice) is not supported");
      if (w.size() >= 3 && w.front().find('%') != std::string_view::npos)
        fail("ElementDataFile with a name pattern (one file per slice) is not supported");
      if (df.find('\0') != std::string_view::npos) fail("ElementDataFile holds a NUL byte");
      ph.data_file = std::string(df);
    }
    return ph;
  }

 private:
  std::string_view text_;
  std::string_view name_;
};

const char* met_type_name(dtype t) {
  switch (t) {
    case dtype::uint8:
      return "MET_UCHAR";
    case dtype::uint16:
      return "MET_USHORT";
    case dtype::int16:
      return "MET_SHORT";
    case dtype::int32:
      return "MET_INT";
    case dtype::float32:
      return "MET_FLOAT";
    case dtype::float64:
      return "MET_DOUBLE";
  }
  return "?";
}

}  // namespace

parsed_header parse_metaimage_header(std::string_view text, std::string_view name) {
  return parser(text, name).parse();
}

std::string format_metaimage_header(const volume_info& info, std::string_view data_file,
                                    std::uint64_t compressed_bytes) {
  const auto& e = info.extent;
  const auto& s = info.spacing;
  const auto& o = info.origin;
  const bool gz = info.enc == encoding::gzip;
  std::string h;
  h += "ObjectType = Image\n";
  h += "NDims = 3\n";
  h += "BinaryData = True\n";
  h += std::string("BinaryDataByteOrderMSB = ") +
       (info.order == byte_order::big ? "True" : "False") + "\n";
  h += std::string("CompressedData = ") + (gz ? "True" : "False") + "\n";
  if (gz && compressed_bytes != 0)
    h += "CompressedDataSize = " + std::to_string(compressed_bytes) + "\n";
  h += "TransformMatrix = 1 0 0 0 1 0 0 0 1\n";
  h +=
      "Offset = " + format_double(o.x) + " " + format_double(o.y) + " " + format_double(o.z) + "\n";
  h += "CenterOfRotation = 0 0 0\n";
  h += "ElementSpacing = " + format_double(s.x) + " " + format_double(s.y) + " " +
       format_double(s.z) + "\n";
  h += "DimSize = " + std::to_string(e.x) + " " + std::to_string(e.y) + " " + std::to_string(e.z) +
       "\n";
  h += std::string("ElementType = ") + met_type_name(info.type) + "\n";
  h += "ElementDataFile = " + (data_file.empty() ? std::string("LOCAL") : std::string(data_file)) +
       "\n";
  return h;
}

}  // namespace vox::io::detail
