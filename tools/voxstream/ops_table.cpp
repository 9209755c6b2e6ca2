// The `voxstream` tool's ops, one entry each (ops_table.hpp says what each field means).
//
// Adding an op is adding one entry to the table below plus its runner:
//   - the entry: option name, value placeholder ("" for a flag), help, parser, result voxel
//     type, z radius (the halo a streamed slab needs) and runner; where they differ from the
//     defaults, its extent, geometry, scratch bytes, `last` and stream role (with its hooks);
//   - the runner (with a terminal op's terminal_hooks) in the family's ops_*.cpp, declared in
//     op_runners.hpp;
//   - the op's op_kind (op_list.hpp, in the table's order) and any new op_spec fields it needs,
//     and a sample value in tests/tools/test_ops_table.cpp, which checks the entry.
// A value that may be left out has its placeholder in brackets ("[CONN]"); the parser then gets
// an empty value and sets the op's default.
// Nothing else in the tool names an op: the command line, --help, the op list's checks, the
// in-memory and streamed runs and the memory estimates read the table. Only prose names ops:
// a few messages, `run --help`'s footer (cli.cpp) and README.md list them by result type.
#include "ops_table.hpp"

#include <cmath>
#include <string>

#include <voxstream/core/error.hpp>

#include "../../src/io/detail/text.hpp"
#include "op_runners.hpp"

namespace vox::cli {

namespace {

// --- value checks shared by several entries ------------------------------------------------------

void expect_odd_window(const extent3& s, std::string_view what, std::string_view text) {
  for (std::size_t v : {s.x, s.y, s.z})
    if (v == 0 || v % 2 == 0) bad_value(what, text, "window sizes must be odd and >= 1");
  for (std::size_t v : {s.x, s.y, s.z})
    if ((v - 1) / 2 > 65536) bad_value(what, text, "window radius above 65536");
}

void parse_window(op_spec& op, std::string_view value, const std::string& what) {
  op.size = parse_triple(value, what);
  expect_odd_window(op.size, what, value);
}

void parse_paxis(op_spec& op, std::string_view value, const std::string& what) {
  op.paxis = parse_axis(value, what);
}

// --- result rules shared by several entries ------------------------------------------------------

dtype same_type(const op_spec&, dtype in) { return in; }
dtype real_type(const op_spec&, dtype in) { return real_of(in); }

std::size_t window_radius(const op_spec& op) { return (op.size.z - 1) / 2; }
std::size_t one_slice(const op_spec&) { return 1; }

std::size_t volume_scratch(const op_spec&, extent3 e, dtype in) {
  return e.voxels() * dtype_size(in);
}

extent3 projected_extent(const op_spec& op, extent3 in) { return projection_extent(in, op.paxis); }

/// The two kept axes; spacing 1 and origin 0 along the third.
geometry projected_geometry(const op_spec& op, const geometry& in) {
  const vec3d& s = in.spacing;
  const vec3d& o = in.origin;
  switch (op.paxis) {
    case projection_axis::x:
      return {{s.y, s.z, 1.0}, {o.y, o.z, 0.0}};
    case projection_axis::y:
      return {{s.x, s.z, 1.0}, {o.x, o.z, 0.0}};
    case projection_axis::z:
    default:
      return {{s.x, s.y, 1.0}, {o.x, o.y, 0.0}};
  }
}

// --- segmentation: connectivity, sampling, structuring elements -----------------------------------

/// [CONN]: scipy's default structure (6) when left out.
void parse_optional_connectivity(op_spec& op, std::string_view value, const std::string& what) {
  op.connectivity = value.empty() ? 6 : parse_connectivity(value, what);
}

/// [S|SX,SY,SZ]: the input's spacing when left out.
void parse_sampling(op_spec& op, std::string_view value, const std::string& what) {
  if (value.empty()) return;
  const auto parts = split(value, ',');
  if (parts.size() != 1 && parts.size() != 3)
    bad_value(what, value, "expected one voxel size or three (SX,SY,SZ)");
  double v[3];
  for (std::size_t i = 0; i < 3; ++i) {
    v[i] = parse_number(parts[parts.size() == 1 ? 0 : i], what);
    if (!(v[i] > 0)) bad_value(what, value, "voxel sizes must be > 0");
  }
  op.sampling = {v[0], v[1], v[2]};
  op.sampling_given = true;
}

std::size_t parse_radius(std::string_view text, std::string_view what, std::string_view value) {
  const std::size_t r = parse_count(text, what);
  if (r > max_ball_radius)
    bad_value(what, value, "a ball radius is at most " + std::to_string(max_ball_radius));
  return r;
}

/// [SHAPE[:R]]: cross (scipy's default, also when left out), ball:R or ball:RX,RY,RZ, disk:R (a
/// ball in each z-slice), box:S or box:SX,SY,SZ (odd sizes).
void parse_element(op_spec& op, std::string_view value, const std::string& what) {
  if (value.empty()) {
    op.se = structuring_element::cross();
    return;
  }
  const auto parts = split(value, ':');
  const std::string shape(io::detail::trim(parts[0]));
  const bool has_size = parts.size() == 2;
  if (parts.size() > 2) bad_value(what, value, "expected SHAPE or SHAPE:SIZE");
  if (shape == "cross") {
    if (has_size) bad_value(what, value, "the cross takes no size (it is the 6 face neighbours)");
    op.se = structuring_element::cross();
  } else if (shape == "ball" || shape == "disk") {
    if (!has_size) bad_value(what, value, "expected " + shape + ":R (a radius)");
    const auto r = split(parts[1], ',');
    if (r.size() == 1 || shape == "disk") {
      if (r.size() != 1) bad_value(what, value, "a disk has one radius");
      const std::size_t rad = parse_radius(r[0], what, value);
      if (rad == 0) bad_value(what, value, "the radius must be >= 1");
      op.se = shape == "disk" ? structuring_element::disk(rad) : structuring_element::ball(rad);
    } else if (r.size() == 3) {
      const std::size_t rx = parse_radius(r[0], what, value);
      const std::size_t ry = parse_radius(r[1], what, value);
      const std::size_t rz = parse_radius(r[2], what, value);
      if (rx + ry + rz == 0) bad_value(what, value, "the radii must not all be 0");
      op.se = structuring_element::ball(rx, ry, rz);
    } else {
      bad_value(what, value, "expected ball:R or ball:RX,RY,RZ");
    }
  } else if (shape == "box") {
    if (!has_size) bad_value(what, value, "expected box:S or box:SX,SY,SZ (odd sizes)");
    const extent3 sz = parse_triple(parts[1], what);
    expect_odd_window(sz, what, value);
    op.se = structuring_element::box(filter_size{sz.x, sz.y, sz.z});
  } else {
    bad_value(what, value, "the shape is cross, ball:R, disk:R or box:S");
  }
}

/// The z radius of one erosion or dilation with op.se.
std::size_t element_radius(const op_spec& op) {
  const structuring_element& se = op.se;
  if (se.dims == 2) return 0;
  switch (se.kind) {
    case structuring_element::shape::box:
      return (se.size.z - 1) / 2;
    case structuring_element::shape::ball:
      return se.radius_z;
    case structuring_element::shape::cross:
    default:
      return 1;
  }
}
/// Opening and closing: an erosion and a dilation, each reading the other's result.
std::size_t twice_element_radius(const op_spec& op) { return 2 * element_radius(op); }

/// Box elements: a normalised copy and the grey filter's scratch, in the input's type; the
/// others: uint8 intermediates (the ball's row distances, the opening's or closing's first step).
std::size_t element_scratch(const op_spec& op, extent3 e, dtype in) {
  if (op.se.kind == structuring_element::shape::box) return 2 * e.voxels() * dtype_size(in);
  return 3 * e.voxels();
}

/// The labels of a mask (int32) made by keep-largest and remove-small, and the per-label counts
/// (fewer labels than half the voxels); an int32 input is the labels itself.
std::size_t component_scratch(const op_spec&, extent3 e, dtype in) {
  return (in == dtype::int32 ? 4 : 8) * e.voxels();
}

dtype int32_type(const op_spec&, dtype) { return dtype::int32; }
dtype mask_type(const op_spec&, dtype) { return dtype::uint8; }

// A streamed crop reads only its z range from the file; its x/y part runs on each slab.
const window_hooks crop_window{
    [](const op_spec& op, extent3 e) {
      const auto box = crop_box(op, e);
      return std::pair<std::size_t, std::size_t>{box.first.z, box.second.z};
    },
    [](const op_spec& op, extent3 e) -> std::optional<op_spec> {
      const auto box = crop_box(op, e);
      if (box.first.x == 0 && box.first.y == 0 && box.second.x == e.x && box.second.y == e.y)
        return std::nullopt;
      op_spec rest = op;
      rest.lo.z = 0;
      rest.hi.z = 0;
      return rest;
    }};

// --- the table, in op_kind order -----------------------------------------------------------------
// Fields in order: kind, name, placeholder, help, parse, type, z_radius, run, and where they are
// not the defaults: extent, geo, scratch, last, role, terminal, window (ops_table.hpp).

std::vector<op_entry> make_table() {
  return {
      {op_kind::gaussian, "gaussian", "SIGMA",
       "Gaussian filter, sigma in voxels (one value or SX,SY,SZ); output float32",
       [](op_spec& op, std::string_view value, const std::string& what) {
         const auto parts = split(value, ',');
         if (parts.size() != 1 && parts.size() != 3)
           bad_value(what, value, "expected one sigma or three (SX,SY,SZ)");
         double s[3];
         for (std::size_t i = 0; i < 3; ++i) {
           s[i] = parse_number(parts[parts.size() == 1 ? 0 : i], what);
           if (!(s[i] > 0)) bad_value(what, value, "sigma must be > 0");
           if (static_cast<double>(4.0 * s[i] + 0.5) > 65536.0)
             bad_value(what, value, "sigma too large (radius above 65536)");
         }
         op.sigma = {s[0], s[1], s[2]};
         op.a = s[0];
       },
       real_type,
       // scipy's truncate 4: radius int(4 sigma + 0.5).
       [](const op_spec& op) { return static_cast<std::size_t>(4.0 * op.sigma.z + 0.5); },
       run_gaussian, same_extent, same_geometry,
       [](const op_spec&, extent3 e, dtype in) { return e.voxels() * dtype_size(real_of(in)); }},
      {op_kind::uniform, "uniform", "SIZE", "box (mean) filter of odd SIZE (or SX,SY,SZ); same type",
       parse_window, same_type, window_radius, run_uniform, same_extent, same_geometry,
       volume_scratch},
      {op_kind::median, "median", "SIZE",
       "median filter over an odd box of up to 15 (or SX,SY,SZ); same type",
       [](op_spec& op, std::string_view value, const std::string& what) {
         parse_window(op, value, what);
         for (std::size_t v : {op.size.x, op.size.y, op.size.z})
           if (v > 15)
             bad_value(what, value, "median windows are at most 15 voxels along each axis");
       },
       same_type, window_radius, run_median},
      {op_kind::erode, "erode", "SIZE", "grey erosion (minimum) over an odd box; same type",
       parse_window, same_type, window_radius, run_erode, same_extent, same_geometry,
       volume_scratch},
      {op_kind::dilate, "dilate", "SIZE", "grey dilation (maximum) over an odd box; same type",
       parse_window, same_type, window_radius, run_dilate, same_extent, same_geometry,
       volume_scratch},
      {op_kind::sobel, "sobel", "AXIS", "Sobel derivative along x, y or z; output float32",
       [](op_spec& op, std::string_view value, const std::string& what) {
         const projection_axis a = parse_axis(value, what);
         op.axis = a == projection_axis::x   ? filter_axis::x
                   : a == projection_axis::y ? filter_axis::y
                                             : filter_axis::z;
       },
       real_type, one_slice, run_sobel},
      {op_kind::gradient_magnitude, "gradient-magnitude", "",
       "Sobel gradient magnitude; output float32", nullptr, real_type, one_slice,
       run_gradient_magnitude},
      {op_kind::threshold, "threshold", "T|LO:HI",
       "mask: 1 where value > T, or LO <= value <= HI, else 0; output uint8",
       [](op_spec& op, std::string_view value, const std::string& what) {
         if (value.find(':') != std::string_view::npos) {
           const auto r = parse_range(value, what);
           op.a = r.first;
           op.b = r.second;
           op.range = true;
         } else {
           op.a = parse_number(value, what);
         }
       },
       [](const op_spec&, dtype) { return dtype::uint8; }, no_halo, run_threshold},
      {op_kind::clamp, "clamp", "LO:HI", "clamp values to [LO, HI]; same type",
       [](op_spec& op, std::string_view value, const std::string& what) {
         const auto r = parse_range(value, what);
         op.a = r.first;
         op.b = r.second;
       },
       same_type, no_halo, run_clamp},
      {op_kind::rescale, "rescale", "SCALE[:OFFSET]", "value * SCALE + OFFSET; output float32",
       [](op_spec& op, std::string_view value, const std::string& what) {
         const auto parts = split(value, ':');
         if (parts.size() > 2) bad_value(what, value, "expected SCALE or SCALE:OFFSET");
         op.a = parse_number(parts.size() == 2 ? parts[0] : value, what);
         op.b = parts.size() == 2 ? parse_number(parts[1], what) : 0.0;
       },
       real_type, no_halo, run_rescale},
      {op_kind::normalize, "normalize", "LO:HI",
       "map [min, max] of the volume linearly onto [LO, HI]; output float32",
       [](op_spec& op, std::string_view value, const std::string& what) {
         const auto r = parse_range(value, what);
         if (!(r.first < r.second)) bad_value(what, value, "LO must be < HI");
         op.a = r.first;
         op.b = r.second;
       },
       real_type, no_halo, run_normalize, same_extent, same_geometry, no_scratch, false,
       stream_role::input_range},
      {op_kind::convert, "convert", "TYPE",
       "convert to uint8|uint16|int16|int32|float32|float64 (rounded, saturated)",
       [](op_spec& op, std::string_view value, const std::string& what) {
         op.type = parse_dtype(value, what);
       },
       [](const op_spec& op, dtype) { return op.type; }, no_halo, run_convert},
      {op_kind::crop, "crop", "X0:X1,Y0:Y1,Z0:Z1",
       "keep the box [X0,X1) x [Y0,Y1) x [Z0,Z1) (an empty bound is the edge: ':,:,10:20'); "
       "first op when streamed",
       [](op_spec& op, std::string_view value, const std::string& what) {
         const auto axes = split(value, ',');
         if (axes.size() != 3) bad_value(what, value, "expected X0:X1,Y0:Y1,Z0:Z1");
         std::size_t lo[3], hi[3];
         for (std::size_t i = 0; i < 3; ++i) {
           const auto r = split(axes[i], ':');
           if (r.size() != 2) bad_value(what, value, "expected X0:X1,Y0:Y1,Z0:Z1");
           lo[i] = io::detail::trim(r[0]).empty() ? 0 : parse_count(r[0], what);
           hi[i] = io::detail::trim(r[1]).empty() ? 0 : parse_count(r[1], what);
           if (hi[i] != 0 && hi[i] <= lo[i]) bad_value(what, value, "an empty range");
         }
         op.lo = {lo[0], lo[1], lo[2]};
         op.hi = {hi[0], hi[1], hi[2]};
       },
       same_type, no_halo, run_crop,
       [](const op_spec& op, extent3 in) {
         const auto box = crop_box(op, in);
         return extent3{box.second.x - box.first.x, box.second.y - box.first.y,
                        box.second.z - box.first.z};
       },
       // The origin moves to the box.
       [](const op_spec& op, const geometry& in) {
         const vec3d& s = in.spacing;
         const vec3d& o = in.origin;
         return geometry{s,
                         {o.x + static_cast<double>(op.lo.x) * s.x,
                          o.y + static_cast<double>(op.lo.y) * s.y,
                          o.z + static_cast<double>(op.lo.z) * s.z}};
       },
       no_scratch, false, stream_role::window, nullptr, &crop_window},
      {op_kind::downsample, "downsample", "F",
       "block mean over F^3 (or FX,FY,FZ) voxels; same type; last op when streamed",
       [](op_spec& op, std::string_view value, const std::string& what) {
         op.size = parse_triple(value, what);
         if (op.size.x == 0 || op.size.y == 0 || op.size.z == 0)
           bad_value(what, value, "factors must be >= 1");
       },
       same_type, no_halo, run_downsample,
       [](const op_spec& op, extent3 in) {
         if (op.size.x > in.x || op.size.y > in.y || op.size.z > in.z)
           throw usage_error("'" + op.text + "': a factor is larger than the extent " + in.str());
         return extent3{in.x / op.size.x, in.y / op.size.y, in.z / op.size.z};
       },
       // Spacing times the factors, origin at the first block's centre (vox::downsample_mean).
       [](const op_spec& op, const geometry& in) {
         const vec3d& s = in.spacing;
         const vec3d& o = in.origin;
         const vec3d f{static_cast<double>(op.size.x), static_cast<double>(op.size.y),
                       static_cast<double>(op.size.z)};
         return geometry{{s.x * f.x, s.y * f.y, s.z * f.z},
                         {o.x + 0.5 * (f.x - 1) * s.x, o.y + 0.5 * (f.y - 1) * s.y,
                          o.z + 0.5 * (f.z - 1) * s.z}};
       },
       no_scratch, false, stream_role::terminal, &downsample_terminal},
      {op_kind::max_projection, "max-projection", "AXIS",
       "maximum intensity projection along x, y or z (must be last); same type", parse_paxis,
       same_type, no_halo, run_max_projection, projected_extent, projected_geometry, no_scratch,
       true, stream_role::terminal, &max_projection_terminal},
      {op_kind::min_projection, "min-projection", "AXIS",
       "minimum intensity projection along x, y or z (must be last); same type", parse_paxis,
       same_type, no_halo, run_min_projection, projected_extent, projected_geometry, no_scratch,
       true, stream_role::terminal, &min_projection_terminal},
      {op_kind::mean_projection, "mean-projection", "AXIS",
       "mean intensity projection along x, y or z (must be last); output float32", parse_paxis,
       real_type, no_halo, run_mean_projection, projected_extent, projected_geometry, no_scratch,
       true, stream_role::terminal, &mean_projection_terminal},
      {op_kind::label, "label", "[CONN]",
       "connected components of the nonzero voxels, numbered 1..N in memory order as "
       "scipy.ndimage.label; CONN 6 (default), 18 or 26, or 4 or 8 within each z-slice; output "
       "int32; needs the whole volume",
       parse_optional_connectivity, int32_type, no_halo, run_label, same_extent, same_geometry,
       no_scratch, false, stream_role::whole_volume},
      {op_kind::fill_holes, "fill-holes", "[CONN]",
       "fill the holes of a mask (background not connected to the border by CONN, default 6), "
       "as scipy.ndimage.binary_fill_holes; 0/1 of the same type; needs the whole volume",
       parse_optional_connectivity, same_type, no_halo, run_fill_holes, same_extent,
       same_geometry,
       // The union-find's parents (int32) and the border flags (uint8).
       [](const op_spec&, extent3 e, dtype) { return 5 * e.voxels(); }, false,
       stream_role::whole_volume},
      {op_kind::keep_largest, "keep-largest", "[CONN]",
       "mask (uint8) of the largest connected component (CONN as for --label); an int32 input "
       "is taken as labels; needs the whole volume",
       parse_optional_connectivity, mask_type, no_halo, run_keep_largest, same_extent,
       same_geometry, component_scratch, false, stream_role::whole_volume},
      {op_kind::remove_small, "remove-small", "N[:CONN]",
       "remove the connected components of fewer than N voxels: a mask gives a uint8 mask, an "
       "int32 input (labels) its labels with the small ones 0; needs the whole volume",
       [](op_spec& op, std::string_view value, const std::string& what) {
         const auto parts = split(value, ':');
         if (parts.size() > 2) bad_value(what, value, "expected N or N:CONN");
         op.min_size = parse_count(parts[0], what);
         op.connectivity = parts.size() == 2 ? parse_connectivity(parts[1], what) : 6;
       },
       [](const op_spec&, dtype in) { return in == dtype::int32 ? dtype::int32 : dtype::uint8; },
       no_halo, run_remove_small, same_extent, same_geometry, component_scratch, false,
       stream_role::whole_volume},
      {op_kind::edt, "edt", "[S|SX,SY,SZ]",
       "Euclidean distance of each nonzero voxel to the nearest zero voxel, in units of the "
       "input's spacing or the voxel size given (scipy.ndimage.distance_transform_edt); output "
       "float32; needs the whole volume",
       parse_sampling, real_type, no_halo, run_edt, same_extent, same_geometry,
       // The passes' nearest features (4 bytes) and, for long columns, parabola stacks (8).
       [](const op_spec&, extent3 e, dtype) { return 12 * e.voxels(); }, false,
       stream_role::whole_volume},
      {op_kind::binary_erosion, "binary-erosion", "[SHAPE[:R]]",
       "binary erosion (scipy.ndimage.binary_erosion) with SHAPE cross (default), ball:R, "
       "disk:R or box:S; 0/1 of the same type",
       parse_element, same_type, element_radius, run_binary_erosion, same_extent, same_geometry,
       element_scratch},
      {op_kind::binary_dilation, "binary-dilation", "[SHAPE[:R]]",
       "binary dilation with SHAPE as for --binary-erosion; 0/1 of the same type", parse_element,
       same_type, element_radius, run_binary_dilation, same_extent, same_geometry,
       element_scratch},
      {op_kind::binary_opening, "binary-opening", "[SHAPE[:R]]",
       "binary opening (erosion, then dilation) with SHAPE as for --binary-erosion; 0/1 of the "
       "same type",
       parse_element, same_type, twice_element_radius, run_binary_opening, same_extent,
       same_geometry, element_scratch},
      {op_kind::binary_closing, "binary-closing", "[SHAPE[:R]]",
       "binary closing (dilation, then erosion; the border is background, as in scipy) with "
       "SHAPE as for --binary-erosion; 0/1 of the same type",
       parse_element, same_type, twice_element_radius, run_binary_closing, same_extent,
       same_geometry, element_scratch},
  };
}

}  // namespace

const std::vector<op_entry>& op_table() {
  static const std::vector<op_entry> table = make_table();
  return table;
}

const op_entry* find_op(std::string_view name) {
  for (const op_entry& e : op_table())
    if (name == e.name) return &e;
  return nullptr;
}

const op_entry& entry_of(op_kind kind) {
  const auto& t = op_table();
  const auto i = static_cast<std::size_t>(kind);
  VOX_EXPECTS(i < t.size() && t[i].kind == kind, "run",
              "internal: op " + std::to_string(i) + " is not in the op table");
  return t[i];
}

}  // namespace vox::cli
