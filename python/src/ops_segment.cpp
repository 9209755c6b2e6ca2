// Segmentation ops of voxstream._voxstream: connected-component labels, hole filling, the exact
// Euclidean distance transform, per-label statistics and sizes, remove_small_objects,
// keep_largest, and binary morphology with structuring elements. As in ops.cpp each op is
// argument conversion plus one run_op call; the scipy.ndimage-style keywords (structure arrays,
// z-y-x tuples, defaults) are handled in python/voxstream/_segment.py. Tuples arrive here in
// x, y, z order.
#include "common.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <voxstream/ops/distance.hpp>
#include <voxstream/ops/label.hpp>
#include <voxstream/ops/morphology.hpp>
#include <voxstream/ops/regions.hpp>

namespace voxpy {

namespace {

using xyz = std::tuple<std::size_t, std::size_t, std::size_t>;
using xyzd = std::tuple<double, double, double>;

template <class>
struct int32_out {
  using type = std::int32_t;
};

/// voxstream.RegionTable: vox::region_stats' rows, computed on the streams.
struct RegionTable {
  std::shared_ptr<vox::region_table> t;
};
/// voxstream.LabelSizes: vox::sizes' counts, computed on the streams.
struct LabelSizes {
  std::shared_ptr<vox::label_sizes> t;
};

/// The rows of a label table as bytes (GIL released while it waits for them).
template <class Table>
nb::bytes table_bytes(const Table& t) {
  using Row = typename std::decay_t<decltype(t.rows())>::value_type;
  const std::vector<Row>* rows = nullptr;
  {
    nb::gil_scoped_release nogil;
    rows = &t.rows();
  }
  return nb::bytes(reinterpret_cast<const char*>(rows->data()), rows->size() * sizeof(Row));
}

// --- labels -----------------------------------------------------------------------------------
nb::tuple label(Volume& mask, int connectivity, Volume* out) {
  std::optional<vox::async_value<std::int32_t>> n;
  nb::object labels = run_op<int32_out>("voxstream.label", mask, out,
                                        [&](auto& s, const auto& m, auto& o) {
                                          n.emplace(vox::label(s, m, o, connectivity));
                                        });
  return nb::make_tuple(labels, make_async(std::move(*n)));
}

nb::object binary_fill_holes(Volume& mask, int connectivity, Volume* out) {
  return run_op<same_t>("voxstream.binary_fill_holes", mask, out,
                        [&](auto& s, const auto& m, auto& o) {
                          vox::binary_fill_holes(s, m, o, connectivity);
                        });
}

// --- distance transform -----------------------------------------------------------------------
/// The distance transform of `mask` into a float32 or float64 volume (`out`'s type, else
/// `dtype`); with `indices`, also the nearest zero voxel's x, y and z index (int32 volumes,
/// `ix`/`iy`/`iz` where given). Returns dist or (dist, iz, iy, ix).
nb::object distance_transform_edt(Volume& mask, std::optional<xyzd> sampling,
                                  const std::string& dtype, bool indices, Volume* out, Volume* ix,
                                  Volume* iy, Volume* iz) {
  constexpr const char* op = "voxstream.distance_transform_edt";
  const vox::dtype rt = out != nullptr ? out->dtype() : parse_dtype(dtype);
  VOX_EXPECTS(rt == vox::dtype::float32 || rt == vox::dtype::float64, op,
              std::string("the distances are float32 or float64, not ") + vox::dtype_name(rt));
  const vox::extent3 e = mask.extent();
  // The index volumes: the caller's (int32, checked by the op) or new ones.
  nb::object idx[3];
  Volume* given[3] = {ix, iy, iz};
  Volume* iv[3] = {nullptr, nullptr, nullptr};
  if (indices) {
    for (int a = 0; a < 3; ++a) {
      if (given[a] != nullptr) {
        (void)get<std::int32_t>(*given[a], op, "an index output");
        idx[a] = nb::find(given[a]);
      } else {
        idx[a] = nb::cast(new_volume(mask.set, e, vox::dtype::int32));
      }
      iv[a] = nb::cast<Volume*>(idx[a]);  // with the GIL, before run_op releases it
    }
  }
  auto run = [&](auto tag) {
    using R = typename decltype(tag)::type;
    return run_op<to<R>::template t>(op, mask, out, [&](auto& s, const auto& m, auto& o) {
      const vox::vec3d sp = sampling ? vox::vec3d{std::get<0>(*sampling), std::get<1>(*sampling),
                                                  std::get<2>(*sampling)}
                                     : m.spacing();
      if (indices) {
        auto& vx = get<std::int32_t>(*iv[0], op, "ix");
        auto& vy = get<std::int32_t>(*iv[1], op, "iy");
        auto& vz = get<std::int32_t>(*iv[2], op, "iz");
        vox::distance_transform_edt(s, m, o, sp, vx, vy, vz);
      } else {
        vox::distance_transform_edt(s, m, o, sp);
      }
    });
  };
  nb::object dist;
  if (rt == vox::dtype::float32) {
    dist = run(vox::dtype_tag<float>{});
  } else {
    dist = run(vox::dtype_tag<double>{});
  }
  if (!indices) return dist;
  return nb::make_tuple(dist, idx[2], idx[1], idx[0]);
}

// --- regions ----------------------------------------------------------------------------------
RegionTable region_stats(Volume& labels, Volume* values, std::size_t num_labels) {
  constexpr const char* op = "voxstream.region_stats";
  auto& l = get<std::int32_t>(labels, op, "labels");
  Volume& v = values != nullptr ? *values : labels;
  return std::visit(
      [&](auto& vals) {
        nb::gil_scoped_release nogil;
        return RegionTable{std::make_shared<vox::region_table>(
            vox::region_stats(*labels.set, static_cast<const vox::volume<std::int32_t>&>(l),
                              static_cast<const std::decay_t<decltype(vals)>&>(vals),
                              num_labels))};
      },
      v.v);
}

LabelSizes sizes(Volume& labels, std::size_t num_labels) {
  auto& l = get<std::int32_t>(labels, "voxstream.sizes", "labels");
  nb::gil_scoped_release nogil;
  return LabelSizes{std::make_shared<vox::label_sizes>(vox::sizes(*labels.set, l, num_labels))};
}

nb::object remove_small_objects(Volume& labels, std::size_t num_labels, std::size_t min_size,
                                Volume* out) {
  constexpr const char* op = "voxstream.remove_small_objects";
  (void)get<std::int32_t>(labels, op, "labels");
  return run_op<same_t>(op, labels, out, [&](auto& s, const auto& l, auto& o) {
    using T = typename std::decay_t<decltype(l)>::value_type;
    if constexpr (std::is_same_v<T, std::int32_t>) {
      vox::remove_small_objects(s, l, o, num_labels, min_size);
    }
  });
}

nb::object keep_largest(Volume& labels, std::size_t num_labels, Volume* out) {
  constexpr const char* op = "voxstream.keep_largest";
  (void)get<std::int32_t>(labels, op, "labels");
  return run_op<mask_t>(op, labels, out, [&](auto& s, const auto& l, auto& o) {
    using T = typename std::decay_t<decltype(l)>::value_type;
    if constexpr (std::is_same_v<T, std::int32_t>) vox::keep_largest(s, l, o, num_labels);
  });
}

// --- binary morphology ------------------------------------------------------------------------
/// kind: 0 box (size), 1 cross, 2 ball (radii); dims 3 or 2.
vox::structuring_element element(int kind, int dims, xyz size, xyz radii) {
  constexpr const char* op = "voxstream.structuring_element";
  VOX_EXPECTS(dims == 2 || dims == 3, op, "dims must be 2 or 3");
  switch (kind) {
    case 0:
      return vox::structuring_element::box(
          vox::filter_size(std::get<0>(size), std::get<1>(size), std::get<2>(size)), dims);
    case 1:
      return vox::structuring_element::cross(dims);
    case 2: {
      auto e = vox::structuring_element::ball(std::get<0>(radii), std::get<1>(radii),
                                              dims == 2 ? 0 : std::get<2>(radii));
      e.dims = dims;
      return e;
    }
    default:
      VOX_FAIL(op, "unknown structuring element kind");
  }
}

nb::object binary_morphology(const std::string& which, Volume& in, int kind, int dims, xyz size,
                             xyz radii, int iterations, bool border_value, Volume* out) {
  const auto se = element(kind, dims, size, radii);
  const std::string op = "voxstream.binary_" + which;
  if (which == "erosion") {
    return run_op<same_t>(op.c_str(), in, out, [&](auto& s, const auto& a, auto& o) {
      vox::binary_erosion(s, a, o, se, iterations, border_value);
    });
  }
  if (which == "dilation") {
    return run_op<same_t>(op.c_str(), in, out, [&](auto& s, const auto& a, auto& o) {
      vox::binary_dilation(s, a, o, se, iterations, border_value);
    });
  }
  if (which == "opening") {
    return run_op<same_t>(op.c_str(), in, out, [&](auto& s, const auto& a, auto& o) {
      vox::binary_opening(s, a, o, se, iterations, border_value);
    });
  }
  VOX_EXPECTS(which == "closing", "voxstream.binary_morphology",
              "unknown operation '" + which + "'");
  return run_op<same_t>(op.c_str(), in, out, [&](auto& s, const auto& a, auto& o) {
    vox::binary_closing(s, a, o, se, iterations, border_value);
  });
}

}  // namespace

void bind_segment(nb::module_& m) {
  nb::class_<RegionTable>(m, "RegionTable",
                          "Per-label statistics computed on the streams; get() waits for them")
      .def_prop_ro("num_labels", [](const RegionTable& r) { return r.t->num_labels(); })
      .def("ready", [](const RegionTable& r) { return r.t->ready(); })
      .def("_rows", [](const RegionTable& r) { return table_bytes(*r.t); });
  nb::class_<LabelSizes>(m, "LabelSizes",
                         "Voxel counts per label computed on the streams; get() waits for them")
      .def_prop_ro("num_labels", [](const LabelSizes& r) { return r.t->num_labels(); })
      .def("ready", [](const LabelSizes& r) { return r.t->ready(); })
      .def("_rows", [](const LabelSizes& r) { return table_bytes(*r.t); });
  // The byte layout of vox::region_row, for a numpy structured dtype.
  nb::dict layout;
  layout["itemsize"] = sizeof(vox::region_row);
  layout["count"] = offsetof(vox::region_row, count);
  layout["sum"] = offsetof(vox::region_row, sum);
  layout["mean"] = offsetof(vox::region_row, mean);
  layout["min"] = offsetof(vox::region_row, min);
  layout["max"] = offsetof(vox::region_row, max);
  layout["bbox_lo"] = offsetof(vox::region_row, bbox_lo);
  layout["bbox_hi"] = offsetof(vox::region_row, bbox_hi);
  layout["centroid"] = offsetof(vox::region_row, centroid);
  m.attr("_region_row_layout") = layout;

  const auto out = nb::arg("out").none() = nb::none();
  m.def("label", &label, nb::arg("mask"), nb::arg("connectivity"), out);
  m.def("binary_fill_holes", &binary_fill_holes, nb::arg("mask"), nb::arg("connectivity"), out);
  m.def("distance_transform_edt", &distance_transform_edt, nb::arg("mask"),
        nb::arg("sampling").none(), nb::arg("dtype"), nb::arg("indices"), out,
        nb::arg("ix").none() = nb::none(), nb::arg("iy").none() = nb::none(),
        nb::arg("iz").none() = nb::none());
  m.def("region_stats", &region_stats, nb::arg("labels"), nb::arg("values").none(),
        nb::arg("num_labels"));
  m.def("sizes", &sizes, nb::arg("labels"), nb::arg("num_labels"));
  m.def("remove_small_objects", &remove_small_objects, nb::arg("labels"), nb::arg("num_labels"),
        nb::arg("min_size"), out);
  m.def("keep_largest", &keep_largest, nb::arg("labels"), nb::arg("num_labels"), out);
  m.def("binary_morphology", &binary_morphology, nb::arg("which"), nb::arg("input"),
        nb::arg("kind"), nb::arg("dims"), nb::arg("size"), nb::arg("radii"),
        nb::arg("iterations"), nb::arg("border_value"), out);
}

}  // namespace voxpy
