// The tool's op table (tools/voxstream/ops_table.cpp): every entry complete and consistent, every
// runner following its entry's type, extent and geometry rules for every voxel type, and every
// terminal op's streamed accumulation equal to its in-memory runner.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <voxstream/core/dtype.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/geometry.hpp>
#include <voxstream/volume.hpp>

#include "op_dispatch.hpp"
#include "ops_table.hpp"

namespace {

using vox::dtype;
using vox::extent3;
using vox::cli::op_entry;
using vox::cli::op_spec;
using vox::cli::stream_role;

/// A value of each op's option for the tests below. A new op needs one here.
const std::map<std::string, std::string>& sample_values() {
  static const std::map<std::string, std::string> v = {
      {"gaussian", "1,0.5,1"},   {"uniform", "3,1,3"},       {"median", "3"},
      {"erode", "3"},            {"dilate", "1,3,3"},        {"sobel", "y"},
      {"gradient-magnitude", ""}, {"threshold", "4.5"},      {"clamp", "2:7"},
      {"rescale", "2:-1"},       {"normalize", "0:1"},       {"convert", "int16"},
      {"crop", "1:5,2:,:7"},     {"downsample", "2,1,2"},    {"max-projection", "x"},
      {"min-projection", "y"},   {"mean-projection", "z"},   {"label", "26"},
      {"fill-holes", ""},        {"keep-largest", "6"},      {"remove-small", "3:18"},
      {"edt", "1,2,0.5"},        {"binary-erosion", "ball:1"}, {"binary-dilation", ""},
      {"binary-opening", "box:3,1,3"}, {"binary-closing", "disk:1"},
  };
  return v;
}

/// A volume of extent `e` with values 0..10 in a pattern (no two neighbours along x equal).
template <class T>
vox::volume<T> pattern_volume(vox::stream_set& s, extent3 e) {
  vox::host_volume<T> h(e);
  for (std::size_t i = 0; i < e.voxels(); ++i) h.data()[i] = static_cast<T>((i * 7 + i / 13) % 11);
  vox::volume<T> v(s, e);
  vox::upload(s, h, v);
  v.set_spacing({0.5, 2.0, 3.0});
  v.set_origin({-4.0, 1.0, 7.0});
  s.synchronize();
  return v;
}

/// The voxels of `v` as doubles; blocks.
std::vector<double> to_doubles(vox::stream_set& s, const vox::cli::any_volume& v) {
  return std::visit(
      [&](const auto& d) {
        using T = vox::cli::voxel_of_t<decltype(d)>;
        vox::host_volume<T> h(d.extent());
        vox::download(s, d, h);
        h.synchronize();
        return std::vector<double>(h.data(), h.data() + h.size());
      },
      v);
}

TEST(OpsTable, EveryEntryIsComplete) {
  const auto& table = vox::cli::op_table();
  ASSERT_FALSE(table.empty());
  ASSERT_EQ(vox::cli::op_names().size(), table.size());
  std::set<std::string> names;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const op_entry& e = table[i];
    ASSERT_NE(e.name, nullptr);
    const std::string name = e.name;
    SCOPED_TRACE("--" + name);
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << "two entries named " << name;
    EXPECT_EQ(static_cast<std::size_t>(e.kind), i) << "entries must be in op_kind order";
    EXPECT_EQ(&vox::cli::entry_of(e.kind), &e);
    EXPECT_EQ(vox::cli::find_op(name), &e);
    EXPECT_EQ(vox::cli::op_names()[i], name);
    ASSERT_NE(e.placeholder, nullptr);
    ASSERT_NE(e.help, nullptr);
    EXPECT_FALSE(std::string(e.help).empty());
    EXPECT_EQ(vox::cli::op_help(name).second, e.help);
    // A flag takes no value and has no parser; every other op has one.
    EXPECT_EQ(e.parse == nullptr, e.placeholder[0] == '\0');
    EXPECT_EQ(vox::cli::op_is_flag(name), e.placeholder[0] == '\0');
    EXPECT_NE(e.type, nullptr);
    EXPECT_NE(e.z_radius, nullptr);
    EXPECT_NE(e.run, nullptr);
    EXPECT_NE(e.extent, nullptr);
    EXPECT_NE(e.geo, nullptr);
    EXPECT_NE(e.scratch, nullptr);
    EXPECT_EQ(e.terminal != nullptr, e.role == stream_role::terminal);
    EXPECT_EQ(e.window != nullptr, e.role == stream_role::window);
    if (e.last) {
      EXPECT_EQ(e.role, stream_role::terminal) << "an op that must be last ends a stream";
    }
    // A value in brackets may be left out: the parser takes an empty value (the default).
    if (e.placeholder[0] == '[') {
      EXPECT_NO_THROW((void)vox::cli::parse_op(name, ""));
    }
    if (e.terminal != nullptr) {
      EXPECT_NE(e.terminal->slab_multiple, nullptr);
      EXPECT_NE(e.terminal->add_slab, nullptr);
      EXPECT_NE(e.terminal->finish, nullptr);
    }
    if (e.window != nullptr) {
      EXPECT_NE(e.window->z_range, nullptr);
      EXPECT_NE(e.window->rest, nullptr);
    }
    EXPECT_EQ(sample_values().count(name), 1u) << "add a sample value for --" << name
                                               << " to sample_values()";
  }
  EXPECT_EQ(vox::cli::find_op("frobnicate"), nullptr);
}

TEST(OpsTable, RunnersFollowTheirRules) {
  vox::stream_set s(3);
  const extent3 e{7, 6, 8};
  for (const auto& [name, value] : sample_values()) {
    const op_spec op = vox::cli::parse_op(name, value);
    for (const dtype t : {dtype::uint8, dtype::uint16, dtype::int16, dtype::int32,
                          dtype::float32, dtype::float64}) {
      SCOPED_TRACE("--" + name + " " + value + " on " + vox::dtype_name(t));
      vox::visit_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const vox::volume<T> in = pattern_volume<T>(s, e);
        const vox::cli::any_volume out = vox::cli::apply_op(s, op, vox::cli::ref_of(in));
        EXPECT_EQ(vox::cli::type_of(out), vox::cli::result_type(op, t));
        const vox::cli::geometry g = vox::cli::result_geometry(
            op, vox::cli::geometry{in.spacing(), in.origin()});
        std::visit(
            [&](const auto& v) {
              EXPECT_EQ(v.extent(), vox::cli::result_extent(op, e));
              EXPECT_EQ(v.spacing(), g.spacing);
              EXPECT_EQ(v.origin(), g.origin);
            },
            out);
      });
    }
  }
  s.synchronize();
}

TEST(OpsTable, TerminalOpsStreamedEqualInMemory) {
  vox::stream_set s(3);
  const extent3 e{7, 6, 8};
  for (const op_entry& entry : vox::cli::op_table()) {
    if (entry.role != stream_role::terminal) continue;
    const std::string name = entry.name;
    const op_spec op = vox::cli::parse_op(name, sample_values().at(name));
    for (const dtype t : {dtype::uint16, dtype::float32, dtype::float64}) {
      SCOPED_TRACE("--" + name + " on " + vox::dtype_name(t));
      vox::visit_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const vox::volume<T> in = pattern_volume<T>(s, e);
        const std::vector<double> want =
            to_doubles(s, vox::cli::apply_op(s, op, vox::cli::ref_of(in)));
        // Slabs of two slices (a multiple of every sample's z factor), as stream_process gives.
        const std::size_t depth = entry.terminal->slab_multiple(op) * 2;
        vox::cli::terminal_state term{op, e, t, std::nullopt};
        for (std::size_t z0 = 0; z0 < e.z; z0 += depth) {
          vox::volume<T> slab(s, extent3{e.x, e.y, std::min(depth, e.z - z0)});
          vox::crop(s, in, slab, extent3{0, 0, z0});
          entry.terminal->add_slab(s, term, vox::cli::ref_of(slab), z0);
        }
        ASSERT_TRUE(term.acc.has_value());
        const vox::cli::any_volume got = entry.terminal->finish(s, term);
        EXPECT_EQ(vox::cli::type_of(got), vox::cli::result_type(op, t));
        const std::vector<double> have = to_doubles(s, got);
        ASSERT_EQ(have.size(), want.size());
        for (std::size_t i = 0; i < have.size(); ++i)
          EXPECT_NEAR(have[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << "voxel " << i;
      });
    }
  }
  s.synchronize();
}

}  // namespace
