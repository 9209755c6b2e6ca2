// bench_ops --sweep: the filter sweep of issue 16. Every filter case on every selected shape and
// voxel type, each against `vox::copy` of the same volume timed in the same run on the same
// stream set; then the worst ratio to copy of every op family against its target.
//
// RESULT lines (one per case; bench/cupy_compare.py parses them):
//   RESULT sweep <case> <dtype> shape=XxYxZ op=<op> dims=<2|3> size=<s>|sigma_xyz=<x,y,z>
//          [rank=<0-based rank> (rank_filter) | q=<percentile> (percentile_filter)]
//          ms=<median> GBps=<bytes / ms> xcopy=<ms / copy ms> reps=<n> streams=<n>
//   RESULT sweep_worst <family> ratio=<worst ms / copy ms> target=<ratio> <meets|misses>
//          case=<case>/<dtype>/<shape>
//   RESULT sweep_harness empty ms=<the fork and join alone> streams=<n>   (first)
//   RESULT sweep_alt <case> <dtype> shape=XxYxZ path=<name> ms=<median>
//          xcopy=<ms / copy ms> vs_default=<ms / the default path's ms>   (another path of the
//          case, timed in the same run: the list below, where the names are given)
// `bytes` is the input read once plus the output written once (gaussian writes float).
// Shapes are x by y by z (z: the slices); scipy's array of the same volume is (z, y, x).
#include "bench_ops.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>

#include "../../src/ops/detail/filter_checks.hpp"
#include "../../src/ops/detail/filter_paths.hpp"

namespace voxbench {
namespace {

enum class op_kind { uniform, erosion, dilation, gaussian, median, rank, percentile };

// The op families of the summary, with their targets (ratio to copy of the same volume).
enum family : int {
  box3,
  box2,
  minmax3,
  minmax2,
  gauss_f32,
  gauss_int,
  median3,
  median5,
  gauss_wide,  // sigma over 4 (radius over 16): no copy target in issue 16, only "not slower than cupyx"
  median_wide,  // median 7: the rank machinery beyond the issue's sizes, no target
  rank_family,  // rank_filter and percentile_filter: the same machinery, no target
  n_family
};
constexpr const char* family_name[n_family] = {"box_3d",        "box_2d",        "minmax_3d",
                                               "minmax_2d",     "gaussian_f32",  "gaussian_int",
                                               "median_size=3", "median_size=5", "gaussian_wide",
                                               "median_wide",   "rank"};
constexpr double no_target = 1e30;
constexpr double family_target[n_family] = {2.0, 2.0,  2.0,       2.0,       2.5,      3.0,
                                            3.0, 25.0, no_target, no_target, no_target};

struct case_desc {
  op_kind op{op_kind::uniform};
  int dims{3};
  std::size_t size{3};
  vox::sigma3 sigma{1.0};
  long rank{0};        // rank_filter's 0-based rank
  double q{0.0};       // percentile_filter's percentile
  std::string name;    // e.g. uniform2d_size=5, gaussian_sigma=x1y1z3
  std::string opname;  // e.g. uniform2d
  std::string param;   // size=5 or sigma_xyz=1,1,3
};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::vector<case_desc> all_cases() {
  std::vector<case_desc> v;
  const struct {
    op_kind op;
    const char* name;
  } boxes[] = {{op_kind::uniform, "uniform"},
               {op_kind::erosion, "erosion"},
               {op_kind::dilation, "dilation"}};
  for (const auto& b : boxes)
    for (int dims : {3, 2})
      for (std::size_t s : {3, 5, 7, 9}) {
        case_desc c;
        c.op = b.op;
        c.dims = dims;
        c.size = s;
        c.opname = std::string(b.name) + (dims == 2 ? "2d" : "");
        c.param = "size=" + std::to_string(s);
        c.name = c.opname + "_" + c.param;
        v.push_back(c);
      }
  for (const vox::sigma3 sg :
       {vox::sigma3(1.0), vox::sigma3(2.0), vox::sigma3(4.0), vox::sigma3(1.0, 1.0, 3.0),
        vox::sigma3(8.0)}) {
    case_desc c;
    c.op = op_kind::gaussian;
    c.sigma = sg;
    c.opname = "gaussian";
    c.param = "sigma_xyz=" + num(sg.x) + "," + num(sg.y) + "," + num(sg.z);
    const bool iso = sg.x == sg.y && sg.y == sg.z;
    c.name =
        "gaussian_sigma=" + (iso ? num(sg.x) : "x" + num(sg.x) + "y" + num(sg.y) + "z" + num(sg.z));
    v.push_back(c);
  }
  for (int dims : {3, 2})
    for (std::size_t s : {3, 5}) {
      case_desc c;
      c.op = op_kind::median;
      c.dims = dims;
      c.size = s;
      c.opname = dims == 2 ? "median2d" : "median";
      c.param = "size=" + std::to_string(s);
      c.name = c.opname + "_" + c.param;
      v.push_back(c);
    }
  // The rank machinery beyond the issue's sizes, as users call it: the median of 7 x 7 x 7, a
  // rank of 3 x 3 x 3 other than the median and one of 3 x 3 per slice (the median's networks
  // in their form for any rank; alternative rank_kernel: the rank machinery), the 25th
  // percentile of 5 x 5 per slice (the networks too; alternative rank_kernel) and of 5 x 5 x 5.
  // No targets; the sweep's alternative any_radii times the instance of rank_kernel that takes
  // any radii.
  const auto rank_case = [&v](op_kind op, const char* opname, std::size_t size, long rank, double q,
                              int dims = 3) {
    case_desc c;
    c.op = op;
    c.dims = dims;
    c.size = size;
    c.rank = rank;
    c.q = q;
    c.opname = opname;
    c.param = "size=" + std::to_string(size);
    if (op == op_kind::rank) c.param += " rank=" + std::to_string(rank);
    if (op == op_kind::percentile) c.param += " q=" + num(q);
    c.name = c.opname + "_size=" + std::to_string(size);
    v.push_back(c);
  };
  rank_case(op_kind::median, "median", 7, 0, 0.0);
  rank_case(op_kind::rank, "rank", 3, 6, 0.0);
  rank_case(op_kind::rank, "rank2d", 3, 2, 0.0, 2);
  rank_case(op_kind::percentile, "percentile2d", 5, 0, 25.0, 2);
  rank_case(op_kind::percentile, "percentile", 5, 0, 25.0);
  return v;
}

bool op_selected(const case_desc& c, const std::vector<std::string>& tokens) {
  for (const auto& t : tokens) {
    if (t == "all" || t == c.name || t == c.opname) return true;
    if (t == "box" && c.op == op_kind::uniform) return true;
    if (t == "minmax" && (c.op == op_kind::erosion || c.op == op_kind::dilation)) return true;
    if (t == "3d" && c.dims == 3) return true;
    if (t == "2d" && c.dims == 2) return true;
    if (t == "rank" && (c.op == op_kind::rank || c.op == op_kind::percentile)) return true;
  }
  return false;
}

int family_of(const case_desc& c, bool is_float) {
  switch (c.op) {
    case op_kind::uniform:
      return c.dims == 3 ? box3 : box2;
    case op_kind::erosion:
    case op_kind::dilation:
      return c.dims == 3 ? minmax3 : minmax2;
    case op_kind::gaussian:
      if (std::max({c.sigma.x, c.sigma.y, c.sigma.z}) > 4.0) return gauss_wide;
      return is_float ? gauss_f32 : gauss_int;
    case op_kind::median:
      return c.size == 3 ? median3 : c.size == 5 ? median5 : median_wide;
    case op_kind::rank:
    case op_kind::percentile:
      return rank_family;
  }
  return box3;
}

template <class T>
T random_voxel(std::uint64_t r);
template <>
std::uint8_t random_voxel<std::uint8_t>(std::uint64_t r) {
  return static_cast<std::uint8_t>(r >> 56);  // [0, 256)
}
template <>
std::uint16_t random_voxel<std::uint16_t>(std::uint64_t r) {
  return static_cast<std::uint16_t>(r >> 52);  // [0, 4096), as bench_ops' other cases
}
template <>
float random_voxel<float>(std::uint64_t r) {
  return static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
}

template <class T>
struct type_name;
template <>
struct type_name<std::uint8_t> {
  static constexpr const char* value = "u8";
};
template <>
struct type_name<std::uint16_t> {
  static constexpr const char* value = "u16";
};
template <>
struct type_name<float> {
  static constexpr const char* value = "f32";
};

struct measured {
  float ms{0};
  int reps{0};
};

// Fast cases as timer::median (3 warm-ups, max_reps runs). A case whose probe (the second run)
// takes over slow_ms gets max(5, min(max_reps, cap_ms / probe)) runs after that one warm-up.
measured time_case(timer& t, const sweep_options& o, const std::function<void(int)>& run) {
  t.once([&] { run(0); });
  const float probe = t.once([&] { run(1); });
  int reps = o.max_reps;
  if (probe > o.slow_ms) {
    reps = std::clamp(static_cast<int>(o.cap_ms / probe), 5, std::max(5, o.max_reps));
  } else {
    t.once([&] { run(2); });
  }
  std::vector<float> v;
  for (int r = 0; r < reps; ++r) v.push_back(t.once([&] { run(r); }));
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], reps};
}

struct worst {
  double ratio{-1};
  std::string where;
};

template <class T>
void sweep_type(vox::stream_set& set, timer& t, const sweep_options& o, const vox::extent3& e,
                const std::vector<case_desc>& cases, std::vector<worst>& worst_of) {
  using R = vox::filter_real_t<T>;
  const char* dt = type_name<T>::value;
  const std::string shape = shape_name(e);
  const std::size_t n = e.voxels();
  const int rotate = 3;  // 3 inputs rotated: a 512x512x300 uint8 volume alone is 75 MiB > L2
  std::vector<vox::volume<T>> in;
  {
    std::vector<T> h(n);
    for (int k = 0; k < rotate; ++k) {
      const std::uint64_t base = (static_cast<std::uint64_t>(k) + 1) << 40;
      for (std::size_t i = 0; i < n; ++i) h[i] = random_voxel<T>(mix(base + i));
      in.emplace_back(set, e);
      vox::upload(set, h.data(), h.size(), in.back());
    }
  }
  vox::volume<T> out(set, e), scratch(set, e);
  vox::volume<R> rout(set, e), rscratch(set, e);
  set.synchronize();
  auto input = [&](int i) -> const vox::volume<T>& {
    return in[static_cast<std::size_t>(i) % in.size()];
  };

  const double same = 2.0 * sizeof(T) * static_cast<double>(n);
  const measured copy = time_case(t, o, [&](int i) { vox::copy(set, input(i), out); });
  const double copy_gbps = same / (copy.ms * 1e6);
  std::printf("%-24s %-4s %-12s %9.3f ms %8.1f GB/s  %6.2fx copy  (%d runs)\n", "copy", dt,
              shape.c_str(), copy.ms, copy_gbps, 1.0, copy.reps);
  std::printf(
      "RESULT sweep copy %s shape=%s op=copy dims=3 size=1 ms=%.4f GBps=%.1f xcopy=1.000 "
      "reps=%d streams=%d\n",
      dt, shape.c_str(), copy.ms, copy_gbps, copy.reps, o.streams);
  std::fflush(stdout);

  for (const case_desc& c : cases) {
    vox::filter_options fo;
    fo.dims = c.dims;
    const vox::filter_size fs(c.size);
    std::function<void(int)> run;
    double bytes = same;
    switch (c.op) {
      case op_kind::uniform:
        run = [&, fo, fs](int i) { vox::uniform(set, input(i), out, scratch, fs, fo); };
        break;
      case op_kind::erosion:
        run = [&, fo, fs](int i) { vox::grey_erosion(set, input(i), out, scratch, fs, fo); };
        break;
      case op_kind::dilation:
        run = [&, fo, fs](int i) { vox::grey_dilation(set, input(i), out, scratch, fs, fo); };
        break;
      case op_kind::gaussian:
        bytes = (sizeof(T) + sizeof(R)) * static_cast<double>(n);
        run = [&, fo](int i) { vox::gaussian(set, input(i), rout, rscratch, c.sigma, fo); };
        break;
      case op_kind::median:
        run = [&, fo](int i) { vox::median(set, input(i), out, c.size, fo); };
        break;
      case op_kind::rank:
        run = [&, fo, fs](int i) { vox::rank_filter(set, input(i), out, c.rank, fs, fo); };
        break;
      case op_kind::percentile:
        run = [&, fo, fs](int i) { vox::percentile_filter(set, input(i), out, c.q, fs, fo); };
        break;
    }
    const measured m = time_case(t, o, run);
    const double gbps = bytes / (m.ms * 1e6);
    const double ratio = m.ms / copy.ms;
    std::printf("%-24s %-4s %-12s %9.3f ms %8.1f GB/s  %6.2fx copy  (%d runs)\n", c.name.c_str(),
                dt, shape.c_str(), m.ms, gbps, ratio, m.reps);
    std::printf(
        "RESULT sweep %s %s shape=%s op=%s dims=%d %s ms=%.4f GBps=%.1f xcopy=%.3f "
        "reps=%d streams=%d\n",
        c.name.c_str(), dt, shape.c_str(), c.opname.c_str(), c.dims, c.param.c_str(), m.ms, gbps,
        ratio, m.reps, o.streams);
    std::fflush(stdout);
    worst& w = worst_of[static_cast<std::size_t>(family_of(c, std::is_same_v<T, float>))];
    if (ratio > w.ratio) w = {ratio, c.name + "/" + dt + "/" + shape};
    // The other paths of a case, where the library has several (each the default before a
    // session's change, or the candidate for it), timed in the same run so that the choice
    // stays measured:
    //  - 3D min/max of size 5 and more: z over a ring in the tile kernel (zring; default: the
    //    z walk);
    //  - box, min and max of size 5 and more, 4-byte voxels: the tile kernel's next slice staged
    //    by loads into registers (register_tile; default: by asynchronous copies);
    //  - box, min and max: the y and x passes by the tile kernel (tile_kernel; default: one
    //    walk along y, where it serves the x radius; the others time the default twice);
    //  - box, min and max: the walk's first form (yx_v1; default: the second, whose interior
    //    chunks skip the border rule, for min, max and the mean of 8-bit voxels);
    //  - 3D box, min and max of size 5 and more: the z walks with one slice in flight and int
    //    sums (z_shallow; default: 4 slices, and for uint8/uint16 means unsigned sums);
    //  - 3D box, min and max: both of the above, the paths before the walks (old_walks);
    //  - the 3x3(x3) mean of 8- and 16-bit voxels: float sums and a division (float_sums;
    //    default: int sums), and for unsigned voxels signed int sums with a clamp per pass
    //    (int_clamp; default: unsigned);
    //  - the 3x3x3 median of 8- and 16-bit voxels: the network on int values, one output
    //    column a value (int_values), or on the voxel type (voxel_values); default: two columns
    //    in the 16-bit lanes of a word; the lanes kernel at two blocks an SM (two_blocks;
    //    default: three);
    //  - the rank machinery in 3D (median 5 and 7, rank_filter, percentile_filter): the
    //    instance of rank_kernel taking any radii (any_radii; default: the one compiled for the
    //    window's square x-y radius 1 to 3);
    //  - rank_filter and percentile_filter of 3x3x3 and 3x3 per slice: the rank machinery
    //    (rank_kernel; default: the median's networks in their form for any rank); of 5x5 per
    //    slice: the rank machinery (rank_kernel; default: those networks, four sorted columns
    //    merged, then the selection with the fifth);
    //  - the 5x5 median per slice: the generated row networks (row_networks; default: four
    //    sorted columns merged, then the selection with the fifth);
    //  - the 3x3 median per slice: the network per voxel, nine loads each (per_voxel; default:
    //    tiles of sorted y-triples, two outputs a thread); the 5x5 median per slice: the rank
    //    kernel (rank_kernel; default: tiles of sorted y-columns, four of them merged);
    //  - the 3D Gaussian of radius <= 8 on every axis: one fused kernel (fused; default: the xy
    //    kernel, then the z kernel);
    //  - the Gaussian's xy pass of 8- and 16-bit voxels at any radius up to 16: the
    //    register-prefetch kernel (xy_prefetch, with the tile kernels; default: the walk, or the
    //    table-addressed kernel);
    //  - the 3D Gaussian's z pass: the register ring (z_ring; default: the transposed-form
    //    FIR);
    //  - the Gaussian's xy pass of radius up to 16: the tile kernels (xy_tiles; default: a walk
    //    along y with the y pass by a FIR);
    //  - the Gaussian of an x or y radius of 17 to 32 or a z radius over 16: three 1D passes
    //    (1d_passes; default: the xy pass, then the z pass or the 1D pass along z).
    struct alt_path {
      std::atomic<bool>* sw;
      bool value;  // the switch's value for this path
      const char* name;
      std::atomic<bool>* sw2 = nullptr;  // a second switch the path sets, if any
      bool value2 = false;
    };
    std::vector<alt_path> alts;
    // The Gaussian's radius along an axis, as the op computes it (default truncate).
    const auto radius = [&](double sigma) {
      return vox::detail::filt::gauss_radius("bench_ops", sigma, vox::filter_options{}.truncate, 0);
    };
    namespace filt = vox::detail::filt;
    const bool gauss = c.op == op_kind::gaussian;
    const long rxy = gauss ? static_cast<long>(std::max(radius(c.sigma.x), radius(c.sigma.y))) : 0;
    if ((c.op == op_kind::erosion || c.op == op_kind::dilation) && c.dims == 3 && c.size >= 5)
      alts.push_back({&filt::minmax_z_walk, false, "zring"});
    if ((c.op == op_kind::uniform || c.op == op_kind::erosion || c.op == op_kind::dilation) &&
        c.size >= 5 && sizeof(T) >= 4)
      alts.push_back({&filt::box_async, false, "register_tile"});
    if (c.op == op_kind::uniform || c.op == op_kind::erosion || c.op == op_kind::dilation)
      alts.push_back({&filt::box_yx_walk, false, "tile_kernel"});
    if (c.op == op_kind::uniform || c.op == op_kind::erosion || c.op == op_kind::dilation)
      alts.push_back({&filt::box_yx_walk_v2, false, "yx_v1"});
    if ((c.op == op_kind::uniform || c.op == op_kind::erosion || c.op == op_kind::dilation) &&
        c.dims == 3 && c.size >= 5)
      alts.push_back({&filt::box_z_walk_deep, false, "z_shallow"});
    if ((c.op == op_kind::uniform || c.op == op_kind::erosion || c.op == op_kind::dilation) &&
        c.dims == 3)
      alts.push_back({&filt::box_yx_walk, false, "old_walks", &filt::box_z_walk_deep, false});
    if (c.op == op_kind::uniform && c.size == 3 && std::is_integral_v<T>)
      alts.push_back({&filt::uniform3_int_sums, false, "float_sums"});
    if (c.op == op_kind::median && c.size == 3 && c.dims == 2)
      alts.push_back({&filt::median2d_net, false, "per_voxel"});
    if (c.op == op_kind::median && c.size == 5 && c.dims == 2)
      alts.push_back({&filt::median2d_net, false, "rank_kernel"});
    if (c.op == op_kind::median && c.size == 5 && c.dims == 2 && sizeof(T) >= 4)
      alts.push_back({&filt::median2d_pair_net, false, "pair_apart", &filt::median25_merge, false});
    // 3x3x3 ranks of voxels up to 4 bytes and 3x3 ranks per slice take the median's networks
    // (rank_nets), not the rank machinery.
    const bool nets3 = (c.op == op_kind::rank || c.op == op_kind::percentile) && c.size == 3 &&
                       (c.dims == 2 || sizeof(T) <= 4);
    if (((c.op == op_kind::median && c.size >= 5) || c.op == op_kind::rank ||
         c.op == op_kind::percentile) &&
        c.dims == 3)
      alts.push_back({&filt::rank_fixed_radii, false, "any_radii", &filt::rank_nets, !nets3});
    if (nets3) alts.push_back({&filt::rank_nets, false, "rank_kernel"});
    if ((c.op == op_kind::rank || c.op == op_kind::percentile) && c.size == 5 && c.dims == 2)
      alts.push_back({&filt::rank25_nets, false, "rank_kernel"});
    if (c.op == op_kind::median && c.size == 5 && c.dims == 2)
      alts.push_back({&filt::median25_merge, false, "row_networks"});
    if (c.op == op_kind::median && c.size == 3 && c.dims == 3 && sizeof(T) <= 2) {
      alts.push_back({&filt::median3_lanes, false, "int_values"});
      alts.push_back(
          {&filt::median3_lanes, false, "voxel_values", &filt::median3_int_values, false});
      alts.push_back({&filt::median3_three_blocks, false, "two_blocks"});
    }
    if (c.op == op_kind::uniform && c.size == 3 && std::is_unsigned_v<T>)
      alts.push_back({&filt::uniform3_uint_sums, false, "int_clamp"});
    if (gauss && c.dims == 3 && rxy <= 8 && radius(c.sigma.z) <= 8)
      alts.push_back({&filt::gauss_fused, true, "fused"});
    if (gauss && sizeof(T) <= 2 && rxy <= 8)
      alts.push_back({&filt::gauss_xy_tables_small, false, "xy_prefetch", &filt::gauss_xy_walk,
                      false});
    if (gauss && !std::is_same_v<T, float> && rxy > 8 && rxy <= 16)
      alts.push_back({&filt::gauss_xy_tables, false, "xy_prefetch", &filt::gauss_xy_walk, false});
    const long rz = gauss && c.dims == 3 ? static_cast<long>(radius(c.sigma.z)) : 0;
    if (gauss && c.dims == 3 && rz <= 16)
      alts.push_back({&filt::gauss_z_fir, false, "z_ring"});
    if (gauss && rxy <= 16)
      alts.push_back({&filt::gauss_xy_walk, false, "xy_tiles"});
    if (gauss && rxy <= 32 && (rxy > 16 || rz > 16))
      alts.push_back({&filt::gauss_wide, false, "1d_passes"});
    for (const alt_path& alt : alts) {
      const measured a = [&] {
        const filt::scoped_path other(*alt.sw, alt.value);
        std::atomic<bool> unused{false};
        const filt::scoped_path second(alt.sw2 != nullptr ? *alt.sw2 : unused, alt.value2);
        return time_case(t, o, run);
      }();
      const char* path = alt.name;
      std::printf("%-24s %-4s %-12s %9.3f ms %8.1f GB/s  %6.2fx copy  (%d runs; %.2fx the "
                  "default)\n",
                  (c.name + "_" + path).c_str(), dt, shape.c_str(), a.ms, bytes / (a.ms * 1e6),
                  a.ms / copy.ms, a.reps, a.ms / m.ms);
      std::printf("RESULT sweep_alt %s %s shape=%s path=%s ms=%.4f xcopy=%.3f vs_default=%.3f\n",
                  c.name.c_str(), dt, shape.c_str(), path, a.ms, a.ms / copy.ms, a.ms / m.ms);
      std::fflush(stdout);
    }
  }
  set.synchronize();  // the volumes are freed next, stream-ordered
}

}  // namespace

void list_filter_sweep() {
  for (const auto& c : all_cases())
    std::printf("%-24s op=%s dims=%d %s\n", c.name.c_str(), c.opname.c_str(), c.dims,
                c.param.c_str());
}

int run_filter_sweep(vox::stream_set& set, const sweep_options& o) {
  std::vector<vox::extent3> shapes;
  for (const auto& s : split(o.shapes, ",")) {
    vox::extent3 e;
    if (!parse_shape(s, e)) {
      std::fprintf(stderr, "bench_ops: --sweep-shapes: bad shape '%s' (XxYxZ or N^3)\n", s.c_str());
      return 2;
    }
    shapes.push_back(e);
  }
  std::vector<std::string> types;
  for (auto s : split(o.types, ",")) {
    if (s == "uint8") s = "u8";
    if (s == "uint16") s = "u16";
    if (s == "float" || s == "float32") s = "f32";
    if (s != "u8" && s != "u16" && s != "f32") {
      std::fprintf(stderr, "bench_ops: --sweep-types: '%s' is not u8, u16 or f32\n", s.c_str());
      return 2;
    }
    types.push_back(s);
  }
  const auto tokens = split(o.ops, ",+|");
  std::vector<case_desc> cases;
  for (const auto& c : all_cases())
    if (op_selected(c, tokens)) cases.push_back(c);
  if (shapes.empty() || types.empty() || cases.empty()) {
    std::fprintf(stderr, "bench_ops: the sweep selects no case (see --sweep-list)\n");
    return 2;
  }

  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  std::printf(
      "bench_ops --sweep on %s (%d SMs), %zu streams: %zu cases x %zu types x %zu shapes "
      "(+ a copy each); median of %d runs, slow cases (> %.0f ms) max(5, %.0f ms / probe) "
      "runs\n",
      prop.name, prop.multiProcessorCount, set.size(), cases.size(), types.size(), shapes.size(),
      o.max_reps, o.slow_ms, o.cap_ms);
  const auto t0 = std::chrono::steady_clock::now();
  timer t(set);
  // The harness alone (the fork and the join of every stream, no op): part of every figure, and
  // not small next to a uint8 copy (a 512x512x300 one moves 150 MB: ~35 us on an H200).
  const float empty_ms = t.median(o.max_reps, [](int) {});
  std::printf("%-24s %-4s %-12s %9.3f ms  (join, no op)\n", "timing harness", "-", "-", empty_ms);
  std::printf("RESULT sweep_harness empty ms=%.4f streams=%d\n", empty_ms, o.streams);
  std::vector<worst> worst_of(n_family);
  for (const auto& e : shapes)
    for (const auto& ty : types) {
      if (ty == "u8") sweep_type<std::uint8_t>(set, t, o, e, cases, worst_of);
      if (ty == "u16") sweep_type<std::uint16_t>(set, t, o, e, cases, worst_of);
      if (ty == "f32") sweep_type<float>(set, t, o, e, cases, worst_of);
    }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::printf("\nworst ratio to copy of every op family (sweep took %.1f s)\n", secs);
  std::printf("%-14s %8s %8s  %-7s %s\n", "family", "ratio", "target", "", "worst case");
  for (int f = 0; f < n_family; ++f) {
    const worst& w = worst_of[static_cast<std::size_t>(f)];
    if (w.ratio < 0) {
      std::printf("%-14s %8s %7.1fx  %-7s\n", family_name[f], "-", family_target[f], "not run");
      continue;
    }
    if (family_target[f] >= no_target) {
      std::printf("%-14s %7.2fx %8s  %-7s %s\n", family_name[f], w.ratio, "-", "", w.where.c_str());
      continue;
    }
    const bool ok = w.ratio <= family_target[f];
    std::printf("%-14s %7.2fx %7.1fx  %-7s %s\n", family_name[f], w.ratio, family_target[f],
                ok ? "meets" : "misses", w.where.c_str());
  }
  for (int f = 0; f < n_family; ++f) {
    const worst& w = worst_of[static_cast<std::size_t>(f)];
    if (w.ratio < 0) continue;
    if (family_target[f] >= no_target) {
      std::printf("RESULT sweep_worst %s ratio=%.3f target=none case=%s\n", family_name[f], w.ratio,
                  w.where.c_str());
      continue;
    }
    std::printf("RESULT sweep_worst %s ratio=%.3f target=%.1f %s case=%s\n", family_name[f],
                w.ratio, family_target[f], w.ratio <= family_target[f] ? "meets" : "misses",
                w.where.c_str());
  }
  return 0;
}

}  // namespace voxbench
