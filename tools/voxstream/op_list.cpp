#include "op_list.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <limits>

#include <voxstream/core/error.hpp>
#include <voxstream/ops/geometry.hpp>

#include "../../src/io/detail/text.hpp"

namespace vox::cli {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
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

[[noreturn]] void bad(std::string_view what, std::string_view text, std::string_view why) {
  throw usage_error(std::string(what) + ": '" + std::string(text) + "': " + std::string(why));
}

std::size_t parse_count(std::string_view text, std::string_view what) {
  std::uint64_t v = 0;
  const std::string_view t = io::detail::trim(text);
  if (!io::detail::parse_u64(t, v) ||
      v > static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max())) {
    const bool digits = !t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos;
    bad(what, text, digits ? "out of range (too large)" : "expected a whole number");
  }
  return static_cast<std::size_t>(v);
}

// "S" or "SX,SY,SZ" of whole numbers.
extent3 parse_triple(std::string_view text, std::string_view what) {
  const auto parts = split(text, ',');
  if (parts.size() == 1) {
    const std::size_t s = parse_count(parts[0], what);
    return {s, s, s};
  }
  if (parts.size() != 3) bad(what, text, "expected one number or three (X,Y,Z)");
  return {parse_count(parts[0], what), parse_count(parts[1], what),
          parse_count(parts[2], what)};
}

void expect_odd_window(const extent3& s, std::string_view what, std::string_view text) {
  for (std::size_t v : {s.x, s.y, s.z})
    if (v == 0 || v % 2 == 0) bad(what, text, "window sizes must be odd and >= 1");
  for (std::size_t v : {s.x, s.y, s.z})
    if ((v - 1) / 2 > 65536) bad(what, text, "window radius above 65536");
}

filter_axis to_filter_axis(projection_axis a) {
  switch (a) {
    case projection_axis::x:
      return filter_axis::x;
    case projection_axis::y:
      return filter_axis::y;
    case projection_axis::z:
    default:
      return filter_axis::z;
  }
}

dtype real_of(dtype t) { return t == dtype::float64 ? dtype::float64 : dtype::float32; }

struct op_entry {
  const char* name;
  op_kind kind;
  const char* placeholder;  // empty: a flag
  const char* help;
};

// In op_kind order.
const op_entry kOps[] = {
    {"gaussian", op_kind::gaussian, "SIGMA",
     "Gaussian filter, sigma in voxels (one value or SX,SY,SZ); output float32"},
    {"uniform", op_kind::uniform, "SIZE", "box (mean) filter of odd SIZE (or SX,SY,SZ); same type"},
    {"median", op_kind::median, "SIZE", "median filter over an odd box of up to 15 (or SX,SY,SZ); same type"},
    {"erode", op_kind::erode, "SIZE", "grey erosion (minimum) over an odd box; same type"},
    {"dilate", op_kind::dilate, "SIZE", "grey dilation (maximum) over an odd box; same type"},
    {"sobel", op_kind::sobel, "AXIS", "Sobel derivative along x, y or z; output float32"},
    {"gradient-magnitude", op_kind::gradient_magnitude, "",
     "Sobel gradient magnitude; output float32"},
    {"threshold", op_kind::threshold, "T|LO:HI",
     "mask: 1 where value > T, or LO <= value <= HI, else 0; output uint8"},
    {"clamp", op_kind::clamp, "LO:HI", "clamp values to [LO, HI]; same type"},
    {"rescale", op_kind::rescale, "SCALE[:OFFSET]", "value * SCALE + OFFSET; output float32"},
    {"normalize", op_kind::normalize, "LO:HI",
     "map [min, max] of the volume linearly onto [LO, HI]; output float32"},
    {"convert", op_kind::convert, "TYPE",
     "convert to uint8|uint16|int16|int32|float32|float64 (rounded, saturated)"},
    {"crop", op_kind::crop, "X0:X1,Y0:Y1,Z0:Z1",
     "keep the box [X0,X1) x [Y0,Y1) x [Z0,Z1) (an empty bound is the edge: ':,:,10:20'); "
     "first op when streamed"},
    {"downsample", op_kind::downsample, "F",
     "block mean over F^3 (or FX,FY,FZ) voxels; same type; last op when streamed"},
    {"max-projection", op_kind::max_projection, "AXIS",
     "maximum intensity projection along x, y or z (must be last); same type"},
    {"min-projection", op_kind::min_projection, "AXIS",
     "minimum intensity projection along x, y or z (must be last); same type"},
    {"mean-projection", op_kind::mean_projection, "AXIS",
     "mean intensity projection along x, y or z (must be last); output float32"},
};

const op_entry* find_entry(std::string_view name) {
  for (const op_entry& e : kOps)
    if (name == e.name) return &e;
  return nullptr;
}

}  // namespace

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const op_entry& e : kOps) n.emplace_back(e.name);
    return n;
  }();
  return names;
}

bool op_is_flag(std::string_view name) {
  const op_entry* e = find_entry(name);
  return e != nullptr && e->placeholder[0] == '\0';
}

std::pair<std::string, std::string> op_help(std::string_view name) {
  const op_entry* e = find_entry(name);
  if (e == nullptr) return {"", ""};
  return {e->placeholder, e->help};
}

op_spec parse_op(std::string_view name, std::string_view value) {
  const op_entry* e = find_entry(name);
  if (e == nullptr) throw usage_error("unknown op '--" + std::string(name) + "'");
  op_spec op;
  op.kind = e->kind;
  const std::string what = "--" + std::string(name);
  op.text = value.empty() ? what : what + " " + std::string(value);
  if (e->placeholder[0] == '\0') {
    if (!value.empty()) bad(what, value, "takes no value");
    return op;
  }
  if (io::detail::trim(value).empty()) bad(what, value, "needs a value");
  switch (op.kind) {
    case op_kind::gaussian: {
      const auto parts = split(value, ',');
      if (parts.size() != 1 && parts.size() != 3)
        bad(what, value, "expected one sigma or three (SX,SY,SZ)");
      double s[3];
      for (std::size_t i = 0; i < 3; ++i) {
        s[i] = parse_number(parts[parts.size() == 1 ? 0 : i], what);
        if (!(s[i] > 0)) bad(what, value, "sigma must be > 0");
        if (static_cast<double>(4.0 * s[i] + 0.5) > 65536.0)
          bad(what, value, "sigma too large (radius above 65536)");
      }
      op.sigma = {s[0], s[1], s[2]};
      op.a = s[0];
      break;
    }
    case op_kind::uniform:
    case op_kind::erode:
    case op_kind::dilate:
      op.size = parse_triple(value, what);
      expect_odd_window(op.size, what, value);
      break;
    case op_kind::median:
      op.size = parse_triple(value, what);
      expect_odd_window(op.size, what, value);
      for (std::size_t v : {op.size.x, op.size.y, op.size.z})
        if (v > 15) bad(what, value, "median windows are at most 15 voxels along each axis");
      break;
    case op_kind::sobel:
      op.axis = to_filter_axis(parse_axis(value, what));
      break;
    case op_kind::threshold:
      if (value.find(':') != std::string_view::npos) {
        const auto r = parse_range(value, what);
        op.a = r.first;
        op.b = r.second;
        op.range = true;
      } else {
        op.a = parse_number(value, what);
      }
      break;
    case op_kind::clamp: {
      const auto r = parse_range(value, what);
      op.a = r.first;
      op.b = r.second;
      break;
    }
    case op_kind::normalize: {
      const auto r = parse_range(value, what);
      if (!(r.first < r.second)) bad(what, value, "LO must be < HI");
      op.a = r.first;
      op.b = r.second;
      break;
    }
    case op_kind::rescale: {
      const auto parts = split(value, ':');
      if (parts.size() > 2) bad(what, value, "expected SCALE or SCALE:OFFSET");
      if (parts.size() == 2) {
        op.a = parse_number(parts[0], what);
        op.b = parse_number(parts[1], what);
      } else {
        op.a = parse_number(value, what);
        op.b = 0.0;
      }
      break;
    }
    case op_kind::convert:
      op.type = parse_dtype(value, what);
      break;
    case op_kind::crop: {
      const auto axes = split(value, ',');
      if (axes.size() != 3) bad(what, value, "expected X0:X1,Y0:Y1,Z0:Z1");
      std::size_t lo[3], hi[3];
      for (std::size_t i = 0; i < 3; ++i) {
        const auto r = split(axes[i], ':');
        if (r.size() != 2) bad(what, value, "expected X0:X1,Y0:Y1,Z0:Z1");
        lo[i] = io::detail::trim(r[0]).empty() ? 0 : parse_count(r[0], what);
        hi[i] = io::detail::trim(r[1]).empty() ? 0 : parse_count(r[1], what);
        if (hi[i] != 0 && hi[i] <= lo[i]) bad(what, value, "an empty range");
      }
      op.lo = {lo[0], lo[1], lo[2]};
      op.hi = {hi[0], hi[1], hi[2]};
      break;
    }
    case op_kind::downsample:
      op.size = parse_triple(value, what);
      if (op.size.x == 0 || op.size.y == 0 || op.size.z == 0)
        bad(what, value, "factors must be >= 1");
      break;
    case op_kind::max_projection:
    case op_kind::min_projection:
    case op_kind::mean_projection:
      op.paxis = parse_axis(value, what);
      break;
    case op_kind::gradient_magnitude:
    default:
      break;
  }
  return op;
}

std::vector<op_spec> parse_ops(const std::vector<std::pair<std::string, std::string>>& args) {
  std::vector<op_spec> ops;
  ops.reserve(args.size());
  for (const auto& a : args) ops.push_back(parse_op(a.first, a.second));
  return ops;
}

bool is_projection(const op_spec& op) noexcept {
  return op.kind == op_kind::max_projection || op.kind == op_kind::min_projection ||
         op.kind == op_kind::mean_projection;
}

bool is_terminal(const op_spec& op) noexcept {
  return is_projection(op) || op.kind == op_kind::downsample;
}

void check_op_list(const std::vector<op_spec>& ops) {
  for (std::size_t i = 0; i + 1 < ops.size(); ++i)
    if (is_projection(ops[i]))
      throw usage_error("'" + ops[i].text + "' must be the last op (it is followed by '" +
                        ops[i + 1].text + "')");
}

std::size_t z_radius(const op_spec& op) noexcept {
  switch (op.kind) {
    case op_kind::gaussian:
      return static_cast<std::size_t>(4.0 * op.sigma.z + 0.5);
    case op_kind::uniform:
    case op_kind::median:
    case op_kind::erode:
    case op_kind::dilate:
      return (op.size.z - 1) / 2;
    case op_kind::sobel:
    case op_kind::gradient_magnitude:
      return 1;
    default:
      return 0;
  }
}

std::size_t halo_of(const std::vector<op_spec>& ops) noexcept {
  std::size_t h = 0;
  for (const op_spec& op : ops) h += z_radius(op);
  return h;
}

dtype result_type(const op_spec& op, dtype in) noexcept {
  switch (op.kind) {
    case op_kind::gaussian:
    case op_kind::sobel:
    case op_kind::gradient_magnitude:
    case op_kind::rescale:
    case op_kind::normalize:
    case op_kind::mean_projection:
      return real_of(in);
    case op_kind::threshold:
      return dtype::uint8;
    case op_kind::convert:
      return op.type;
    default:
      return in;
  }
}

dtype result_type(const std::vector<op_spec>& ops, dtype in) noexcept {
  for (const op_spec& op : ops) in = result_type(op, in);
  return in;
}

std::pair<extent3, extent3> crop_box(const op_spec& op, extent3 in) {
  const extent3 hi{op.hi.x == 0 ? in.x : op.hi.x, op.hi.y == 0 ? in.y : op.hi.y,
                   op.hi.z == 0 ? in.z : op.hi.z};
  if (hi.x > in.x || hi.y > in.y || hi.z > in.z || op.lo.x >= hi.x || op.lo.y >= hi.y ||
      op.lo.z >= hi.z)
    throw usage_error("'" + op.text + "': the box is empty or leaves the extent " + in.str());
  return {op.lo, hi};
}

op_spec crop_along(projection_axis axis, std::size_t a, std::size_t b) {
  op_spec op;
  op.kind = op_kind::crop;
  const std::string r = std::to_string(a) + ":" + std::to_string(b);
  switch (axis) {
    case projection_axis::x:
      op.lo.x = a;
      op.hi.x = b;
      op.text = "--slab " + r + " (along x)";
      break;
    case projection_axis::y:
      op.lo.y = a;
      op.hi.y = b;
      op.text = "--slab " + r + " (along y)";
      break;
    case projection_axis::z:
    default:
      op.lo.z = a;
      op.hi.z = b;
      op.text = "--slab " + r + " (along z)";
      break;
  }
  if (b <= a) throw usage_error("'" + op.text + "': an empty range");
  return op;
}

extent3 result_extent(const op_spec& op, extent3 in) {
  if (is_projection(op)) return projection_extent(in, op.paxis);
  if (op.kind == op_kind::crop) {
    const auto box = crop_box(op, in);
    return extent3{box.second.x - box.first.x, box.second.y - box.first.y,
                   box.second.z - box.first.z};
  }
  if (op.kind == op_kind::downsample) {
    if (op.size.x > in.x || op.size.y > in.y || op.size.z > in.z)
      throw usage_error("'" + op.text + "': a factor is larger than the extent " + in.str());
    return extent3{in.x / op.size.x, in.y / op.size.y, in.z / op.size.z};
  }
  return in;
}

extent3 result_extent(const std::vector<op_spec>& ops, extent3 in) {
  for (const op_spec& op : ops) in = result_extent(op, in);
  return in;
}

geometry result_geometry(const op_spec& op, const geometry& in) noexcept {
  geometry g = in;
  const vec3d& s = in.spacing;
  const vec3d& o = in.origin;
  if (op.kind == op_kind::crop) {
    g.origin = {o.x + static_cast<double>(op.lo.x) * s.x, o.y + static_cast<double>(op.lo.y) * s.y,
                o.z + static_cast<double>(op.lo.z) * s.z};
  } else if (op.kind == op_kind::downsample) {
    const double fx = static_cast<double>(op.size.x);
    const double fy = static_cast<double>(op.size.y);
    const double fz = static_cast<double>(op.size.z);
    g.spacing = {s.x * fx, s.y * fy, s.z * fz};
    g.origin = {o.x + 0.5 * (fx - 1) * s.x, o.y + 0.5 * (fy - 1) * s.y,
                o.z + 0.5 * (fz - 1) * s.z};
  } else if (is_projection(op)) {
    switch (op.paxis) {
      case projection_axis::x:
        g.spacing = {s.y, s.z, 1.0};
        g.origin = {o.y, o.z, 0.0};
        break;
      case projection_axis::y:
        g.spacing = {s.x, s.z, 1.0};
        g.origin = {o.x, o.z, 0.0};
        break;
      case projection_axis::z:
      default:
        g.spacing = {s.x, s.y, 1.0};
        g.origin = {o.x, o.y, 0.0};
        break;
    }
  }
  return g;
}

std::size_t scratch_bytes(const op_spec& op, extent3 e, dtype in) noexcept {
  switch (op.kind) {
    case op_kind::gaussian:
      return e.voxels() * dtype_size(real_of(in));
    case op_kind::uniform:
    case op_kind::erode:
    case op_kind::dilate:
      return e.voxels() * dtype_size(in);
    default:
      return 0;
  }
}

std::size_t peak_device_bytes(const std::vector<op_spec>& ops, extent3 e, dtype in) {
  std::size_t peak = e.voxels() * dtype_size(in);
  for (const op_spec& op : ops) {
    const dtype t = result_type(op, in);
    const extent3 o = result_extent(op, e);
    const std::size_t need =
        e.voxels() * dtype_size(in) + o.voxels() * dtype_size(t) + scratch_bytes(op, e, in);
    peak = std::max(peak, need);
    e = o;
    in = t;
  }
  return peak;
}

std::size_t streamed_slab_depth(std::size_t budget, extent3 e, dtype in, dtype out,
                                const std::vector<op_spec>& chain, std::size_t halo,
                                std::size_t fixed, std::size_t buffers, std::size_t multiple) {
  if (multiple == 0) multiple = 1;
  const extent3 slice{e.x, e.y, 1};
  const std::size_t per_slice = buffers * slice.voxels() * (dtype_size(in) + dtype_size(out)) +
                                peak_device_bytes(chain, slice, in);
  const std::size_t need_min = fixed + (multiple + 2 * halo) * per_slice;
  if (budget < need_min)
    throw usage_error("--budget " + format_bytes(budget) + " is too small to stream a volume of " +
                      e.str() + ": a slab of " + std::to_string(multiple) +
                      " slice(s) with a halo of " + std::to_string(halo) + " needs about " +
                      format_bytes(need_min));
  std::size_t depth = (budget - fixed) / per_slice - 2 * halo;
  depth = std::min(depth, e.z);
  depth -= depth % multiple;
  return std::max(depth, multiple);
}

// --- value parsers ------------------------------------------------------------------------------

std::size_t parse_bytes(std::string_view text) {
  const std::string_view what = "--budget";
  std::string_view t = io::detail::trim(text);
  std::size_t n = 0;
  while (n < t.size() && (std::isdigit(static_cast<unsigned char>(t[n])) || t[n] == '.')) ++n;
  if (n == 0) bad(what, text, "expected a size such as 512M, 2G or 1073741824");
  double v = 0;
  if (!io::detail::parse_double(t.substr(0, n), v) || !std::isfinite(v) || v < 0)
    bad(what, text, "expected a size such as 512M, 2G or 1073741824");
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
    bad(what, text, "unknown unit (use K, M, G or T)");
  }
  const double bytes = std::floor(v * mult);
  if (!(bytes >= 1)) bad(what, text, "must be at least 1 byte");
  if (bytes >= 18446744073709551615.0) bad(what, text, "too large");
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
  bad(what, text, "expected uint8, uint16, int16, int32, float32 or float64");
}

projection_axis parse_axis(std::string_view text, std::string_view what) {
  const std::string t = lower(io::detail::trim(text));
  if (t == "x") return projection_axis::x;
  if (t == "y") return projection_axis::y;
  if (t == "z") return projection_axis::z;
  bad(what, text, "expected an axis: x, y or z");
}

extent3 parse_extent(std::string_view text, std::string_view what) {
  std::string t(io::detail::trim(text));
  for (char& c : t)
    if (c == 'x' || c == 'X') c = ',';
  const extent3 e = parse_triple(t, what);
  if (e.empty()) bad(what, text, "every size must be >= 1");
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
      bad(what, text, "out of range");
    bad(what, text, "expected a number");
  }
  if (!std::isfinite(v)) bad(what, text, "the number must be finite");
  return v;
}

std::pair<std::size_t, std::size_t> parse_index_range(std::string_view text,
                                                      std::string_view what) {
  const auto parts = split(text, ':');
  if (parts.size() != 2) bad(what, text, "expected A:B (slice indices, B excluded)");
  const std::size_t a = parse_count(parts[0], what);
  const std::size_t b = parse_count(parts[1], what);
  if (b <= a) bad(what, text, "an empty range: B must be above A");
  return {a, b};
}

std::pair<double, double> parse_range(std::string_view text, std::string_view what) {
  const auto parts = split(text, ':');
  if (parts.size() != 2) bad(what, text, "expected LO:HI");
  const double lo = parse_number(parts[0], what);
  const double hi = parse_number(parts[1], what);
  if (lo > hi) bad(what, text, "LO must not be above HI");
  return {lo, hi};
}

}  // namespace vox::cli
