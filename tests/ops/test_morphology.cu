// Binary morphology (binary_erosion / dilation / opening / closing): agreement with
// scipy.ndimage on the fixtures of tests/ops/gen_morphology_fixtures.py (scipy 1.10.1), and
// with a brute-force host reference (the element's offsets, voxel by voxel) on random volumes
// of every voxel type, several stream sets, edge extents and argument errors.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <voxstream/ops/morphology.hpp>
#include <voxstream/voxstream.hpp>

#include "../common/fixtures.hpp"
#include "../common/stream_sets.hpp"
#include "../common/volumes.hpp"

namespace {

using vox::extent3;
using vox::structuring_element;
using vox_test::fetch;
using vox_test::make_volume;
using vox_test::poisoned;
using shape = structuring_element::shape;

enum class morph_op { erosion, dilation, opening, closing };

const char* name_of(morph_op op) {
  switch (op) {
    case morph_op::erosion: return "erosion";
    case morph_op::dilation: return "dilation";
    case morph_op::opening: return "opening";
    default: return "closing";
  }
}

morph_op op_of(const std::string& s) {
  if (s == "erosion") return morph_op::erosion;
  if (s == "dilation") return morph_op::dilation;
  if (s == "opening") return morph_op::opening;
  return morph_op::closing;
}

template <class T>
void apply(morph_op op, vox::stream_set& s, const vox::volume<T>& in, vox::volume<T>& out,
           const structuring_element& se, int it, bool bv) {
  switch (op) {
    case morph_op::erosion: vox::binary_erosion(s, in, out, se, it, bv); break;
    case morph_op::dilation: vox::binary_dilation(s, in, out, se, it, bv); break;
    case morph_op::opening: vox::binary_opening(s, in, out, se, it, bv); break;
    case morph_op::closing: vox::binary_closing(s, in, out, se, it, bv); break;
  }
}

std::string describe(const structuring_element& se) {
  std::ostringstream o;
  if (se.kind == shape::box) {
    o << "box " << se.size.x << "x" << se.size.y << "x" << se.size.z;
  } else if (se.kind == shape::cross) {
    o << "cross";
  } else {
    o << "ball " << se.radius_x << "," << se.radius_y << "," << se.radius_z;
  }
  o << " dims " << se.dims;
  return o.str();
}

// ---- brute-force reference -------------------------------------------------------------------

using offset = std::array<long, 3>;

/// The element's offsets (dx, dy, dz), from its definition.
std::vector<offset> offsets_of(const structuring_element& se) {
  std::vector<offset> v;
  const bool d3 = se.dims == 3;
  if (se.kind == shape::box) {
    const long rx = long(se.size.x / 2), ry = long(se.size.y / 2), rz = d3 ? long(se.size.z / 2) : 0;
    for (long z = -rz; z <= rz; ++z)
      for (long y = -ry; y <= ry; ++y)
        for (long x = -rx; x <= rx; ++x) v.push_back({x, y, z});
  } else if (se.kind == shape::cross) {
    v = {{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}};
    if (d3) {
      v.push_back({0, 0, -1});
      v.push_back({0, 0, 1});
    }
  } else {
    const double r[3] = {double(se.radius_x), double(se.radius_y),
                         d3 ? double(se.radius_z) : 0.0};
    const long ri[3] = {long(r[0]), long(r[1]), long(r[2])};
    for (long z = -ri[2]; z <= ri[2]; ++z)
      for (long y = -ri[1]; y <= ri[1]; ++y)
        for (long x = -ri[0]; x <= ri[0]; ++x) {
          const long d[3] = {x, y, z};
          // (d_a / r_a)^2 summed, in long double; exact enough to decide <= 1 for these radii,
          // with a tolerance below the smallest nonzero gap (1 / (r_a^2 r_b^2) > 1e-7).
          long double s = 0;
          for (int a = 0; a < 3; ++a)
            if (ri[a] > 0) s += (long double)(d[a] * d[a]) / (long double)(ri[a] * ri[a]);
          if (s <= 1.0L + 1e-12L) v.push_back({x, y, z});
        }
  }
  return v;
}

/// One step on a 0/1 mask: erosion (all) or dilation (any), outside voxels = bv.
std::vector<std::uint8_t> ref_step(const std::vector<std::uint8_t>& m, const extent3& e,
                                   const std::vector<offset>& offs, bool erode, bool bv) {
  std::vector<std::uint8_t> out(m.size());
  const long nx = long(e.x), ny = long(e.y), nz = long(e.z);
  for (long z = 0; z < nz; ++z)
    for (long y = 0; y < ny; ++y)
      for (long x = 0; x < nx; ++x) {
        bool r = erode;
        for (const offset& o : offs) {
          const long xx = x + o[0], yy = y + o[1], zz = z + o[2];
          const bool in = xx >= 0 && xx < nx && yy >= 0 && yy < ny && zz >= 0 && zz < nz;
          const bool v = in ? m[std::size_t((zz * ny + yy) * nx + xx)] != 0 : bv;
          if (erode ? !v : v) {
            r = !erode;
            break;
          }
        }
        out[std::size_t((z * ny + y) * nx + x)] = r ? 1 : 0;
      }
  return out;
}

template <class T>
std::vector<std::uint8_t> reference(morph_op op, const std::vector<T>& h, const extent3& e,
                                    const structuring_element& se, int it, bool bv) {
  std::vector<std::uint8_t> m(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) m[i] = h[i] != T(0) ? 1 : 0;  // NaN: foreground
  const std::vector<offset> offs = offsets_of(se);
  std::vector<bool> steps;
  const bool first_erode = op == morph_op::erosion || op == morph_op::opening;
  for (int i = 0; i < it; ++i) steps.push_back(first_erode);
  if (op == morph_op::opening || op == morph_op::closing)
    for (int i = 0; i < it; ++i) steps.push_back(!first_erode);
  for (bool erode : steps) m = ref_step(m, e, offs, erode, bv);
  return m;
}

/// Voxels of `got` (of any type) that are not the 0/1 of `want`; the first few are reported.
template <class T>
std::size_t mismatches(const std::vector<T>& got, const std::vector<std::uint8_t>& want,
                       const extent3& e) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool ok = (want[i] ? got[i] == T(1) : got[i] == T(0));
    if (!ok && bad++ < 5) {
      ADD_FAILURE() << "voxel (" << i % e.x << ", " << (i / e.x) % e.y << ", " << i / (e.x * e.y)
                    << "): got " << double(got[i]) << ", want " << int(want[i]);
    }
  }
  return bad;
}

template <class T>
std::vector<T> random_mask(const extent3& e, double density, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<T> h(e.voxels());
  for (auto& v : h) {
    if (u(g) >= density) {
      v = T(0);
      continue;
    }
    // Foreground of several values: "nonzero" counts, not "== 1" (negative ones for signed
    // types, NaN and a tiny value for floating ones).
    const double c = u(g);
    if constexpr (std::is_floating_point_v<T>) {
      v = c < 0.1 ? std::numeric_limits<T>::quiet_NaN()
                  : c < 0.2 ? T(1e-30) : c < 0.5 ? T(-2.5) : T(1);
    } else if constexpr (std::is_signed_v<T>) {
      v = c < 0.3 ? T(-1) : c < 0.6 ? T(7) : T(1);
    } else {
      v = c < 0.5 ? T(1) : T(std::numeric_limits<T>::max());
    }
  }
  return h;
}

// ---- scipy fixtures --------------------------------------------------------------------------

struct fixture_case {
  std::string line;
  morph_op op;
  std::string in;
  extent3 e;
  structuring_element se;
  int it;
  bool bv;
  std::size_t off;
};

std::vector<long> numbers(const std::string& s) {
  std::vector<long> v;
  for (double d : vox_test::numbers(s)) v.push_back(static_cast<long>(d));
  return v;
}

std::vector<std::uint8_t> read_file(const std::string& name) {
  std::ifstream f(std::string(VOX_FIXTURE_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot read " << name;
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::vector<fixture_case> load_cases() {
  std::vector<fixture_case> cases;
  for (const vox_test::index_line& l : vox_test::read_index("morph_index.txt")) {
    const std::string& op = l.op;
    const std::map<std::string, std::string>& kv = l.kv;
    fixture_case c;
    c.line = l.line;
    c.op = op_of(op);
    c.in = kv.at("in");
    const auto ext = numbers(kv.at("ext"));
    c.e = extent3{std::size_t(ext[0]), std::size_t(ext[1]), std::size_t(ext[2])};
    const auto p = numbers(kv.at("p"));
    const int dims = std::stoi(kv.at("dims"));
    const std::string k = kv.at("se");
    if (k == "box") {
      c.se = structuring_element::box({std::size_t(p[0]), std::size_t(p[1]), std::size_t(p[2])},
                                      dims);
    } else if (k == "cross") {
      c.se = structuring_element::cross(dims);
    } else {
      c.se = structuring_element::ball(std::size_t(p[0]), std::size_t(p[1]), std::size_t(p[2]));
      c.se.dims = dims;
    }
    c.it = std::stoi(kv.at("it"));
    c.bv = kv.at("bv") == "1";
    c.off = std::stoul(kv.at("off"));
    cases.push_back(c);
  }
  return cases;
}

template <class T>
class MorphologyTyped : public ::testing::Test {};
using all_types =
    ::testing::Types<std::uint8_t, std::uint16_t, std::int16_t, std::int32_t, float, double>;
TYPED_TEST_SUITE(MorphologyTyped, all_types);

TYPED_TEST(MorphologyTyped, MatchesScipyFixtures) {
  using T = TypeParam;
  const std::vector<fixture_case> cases = load_cases();
  ASSERT_GE(cases.size(), 150u);
  const std::vector<std::uint8_t> bits = read_file("morph_out.bits");
  std::map<std::string, std::vector<std::uint8_t>> inputs;
  // Every type on one stream and on three streams with a slab each; uint8 and float on every
  // set (the fixtures take ~100 s per type under ASan on two cores otherwise).
  const bool all_sets = std::is_same_v<T, std::uint8_t> || std::is_same_v<T, float>;
  std::size_t runs = 0;
  for (const vox_test::stream_config& cfg : vox_test::all_configs) {
    // The other types: one stream, and three streams with a slab each (slab seams).
    const bool seams = cfg.streams == 3 && cfg.every_stream &&
                       cfg.mapping == vox::slice_mapping::contiguous;
    if (!all_sets && cfg.streams != 1 && !seams) continue;
    SCOPED_TRACE(vox_test::describe(cfg));
    vox::stream_set set = vox_test::make_set(cfg);
    for (const fixture_case& c : cases) {
      SCOPED_TRACE(c.line);
      auto it = inputs.find(c.in);
      if (it == inputs.end()) it = inputs.emplace(c.in, read_file("morph_in_" + c.in + ".u8")).first;
      ASSERT_EQ(it->second.size(), c.e.voxels());
      const std::vector<T> h(it->second.begin(), it->second.end());
      std::vector<std::uint8_t> want(c.e.voxels());
      ASSERT_LE(c.off + (want.size() + 7) / 8, bits.size());
      for (std::size_t i = 0; i < want.size(); ++i) want[i] = (bits[c.off + i / 8] >> (i % 8)) & 1;
      const vox::volume<T> in = make_volume(set, c.e, h);
      vox::volume<T> out = poisoned<T>(set, c.e);
      apply(c.op, set, in, out, c.se, c.it, c.bv);
      ASSERT_EQ(mismatches(fetch(set, out), want, c.e), 0u);
      // The brute-force reference agrees with scipy on the same case.
      ASSERT_EQ(reference(c.op, h, c.e, c.se, c.it, c.bv), want);
      ++runs;
    }
  }
  EXPECT_GT(runs, 0u);
}

// ---- brute-force reference on random volumes ---------------------------------------------------

const structuring_element brute_elements[] = {
    structuring_element::box(3),
    structuring_element::box({5, 1, 3}),
    structuring_element::box({3, 5, 9}, 2),
    structuring_element::box(1),
    structuring_element::cross(),
    structuring_element::cross(2),
    structuring_element::ball(0),
    structuring_element::ball(1),
    structuring_element::ball(2),
    structuring_element::ball(4),
    structuring_element::ball(4, 2, 1),
    structuring_element::ball(1, 0, 3),
    structuring_element::ball(0, 0, 2),
    structuring_element::disk(3),
};

TYPED_TEST(MorphologyTyped, MatchesBruteForce) {
  using T = TypeParam;
  const extent3 extents[] = {{17, 13, 9}, {9, 7, 1}, {1, 1, 1}, {1, 5, 4}, {6, 1, 3}, {35, 4, 6}};
  unsigned seed = 1;
  for (const vox_test::stream_config& cfg : vox_test::all_configs) {
    SCOPED_TRACE(vox_test::describe(cfg));
    vox::stream_set set = vox_test::make_set(cfg);
    for (const extent3& e : extents) {
      SCOPED_TRACE("extent " + e.str());
      for (const structuring_element& se : brute_elements) {
        SCOPED_TRACE(describe(se));
        ++seed;
        const double density = 0.25 + 0.5 * ((seed * 7) % 5) / 4.0;
        const std::vector<T> h = random_mask<T>(e, density, seed);
        const vox::volume<T> in = make_volume(set, e, h);
        // Rotate through the ops, iterations 1 to 3 and both border values.
        const morph_op op = morph_op(seed % 4);
        const int it = 1 + int((seed / 4) % 3);
        const bool bv = (seed / 12) % 2 == 1;
        SCOPED_TRACE(std::string(name_of(op)) + " iterations " + std::to_string(it) +
                     " border " + std::to_string(bv));
        vox::volume<T> out = poisoned<T>(set, e);
        apply(op, set, in, out, se, it, bv);
        ASSERT_EQ(mismatches(fetch(set, out), reference(op, h, e, se, it, bv), e), 0u);
      }
    }
  }
}

TEST(Morphology, EveryOpIterationAndBorderOfTheBallAndCross) {
  // The full product on one volume: every op, iterations 1..3, both border values.
  const extent3 e{13, 11, 10};
  vox::stream_set set = vox_test::make_set({3, vox::slice_mapping::contiguous, true});
  const std::vector<float> h = random_mask<float>(e, 0.55, 99);
  const vox::volume<float> in = make_volume(set, e, h);
  for (const structuring_element& se :
       {structuring_element::cross(), structuring_element::ball(2), structuring_element::box(3)}) {
    for (int op = 0; op < 4; ++op)
      for (int it = 1; it <= 3; ++it)
        for (bool bv : {false, true}) {
          SCOPED_TRACE(describe(se) + " " + name_of(morph_op(op)) + " iterations " +
                       std::to_string(it) + " border " + std::to_string(bv));
          vox::volume<float> out = poisoned<float>(set, e);
          apply(morph_op(op), set, in, out, se, it, bv);
          const auto want = reference(morph_op(op), h, e, se, it, bv);
          ASSERT_EQ(mismatches(fetch(set, out), want, e), 0u);
        }
  }
}

TEST(Morphology, WideSlicesAndDeepBall) {
  // Rows of a length that is not a multiple of 4 over many x groups, a ball deeper than the
  // slabs of a 4-stream set (halo across several slabs), and 8-bit voxels.
  const extent3 e{203, 37, 12};
  vox::stream_set set = vox_test::make_set({4, vox::slice_mapping::contiguous, true});
  const std::vector<std::uint8_t> h = random_mask<std::uint8_t>(e, 0.35, 7);
  const vox::volume<std::uint8_t> in = make_volume(set, e, h);
  for (const structuring_element& se : {structuring_element::ball(5),
                                        structuring_element::ball(7, 3, 4)}) {
    for (bool bv : {false, true}) {
      SCOPED_TRACE(describe(se) + " border " + std::to_string(bv));
      vox::volume<std::uint8_t> out = poisoned<std::uint8_t>(set, e);
      vox::binary_dilation(set, in, out, se, 1, bv);
      ASSERT_EQ(mismatches(fetch(set, out), reference(morph_op::dilation, h, e, se, 1, bv), e), 0u);
      vox::binary_erosion(set, in, out, se, 1, bv);
      ASSERT_EQ(mismatches(fetch(set, out), reference(morph_op::erosion, h, e, se, 1, bv), e), 0u);
    }
  }
}

TEST(Morphology, BallOfRadiusOneIsTheCross) {
  const extent3 e{15, 12, 7};
  vox::stream_set set(2);
  const std::vector<std::int16_t> h = random_mask<std::int16_t>(e, 0.7, 3);
  const vox::volume<std::int16_t> in = make_volume(set, e, h);
  vox::volume<std::int16_t> a = poisoned<std::int16_t>(set, e), b = poisoned<std::int16_t>(set, e);
  vox::binary_opening(set, in, a, structuring_element::ball(1));
  vox::binary_opening(set, in, b);  // the default element: the cross
  const auto ha = fetch(set, a);
  EXPECT_EQ(ha, fetch(set, b));
  vox::binary_closing(set, in, a, structuring_element::disk(1), 1, true);
  vox::binary_closing(set, in, b, structuring_element::cross(2), 1, true);
  EXPECT_EQ(fetch(set, a), fetch(set, b));
  std::size_t ones = 0;
  for (auto v : ha) ones += v == 1;
  EXPECT_GT(ones, 0u);  // not a trivial result
  EXPECT_LT(ones, ha.size());
}

TEST(Morphology, BadArgumentsThrowAndLeaveTheOutputUntouched) {
  const extent3 e{8, 6, 5};
  vox::stream_set set(2);
  const std::vector<float> h = random_mask<float>(e, 0.5, 5);
  const vox::volume<float> in = make_volume(set, e, h);
  vox::volume<float> out = poisoned<float>(set, e);
  vox::volume<float> other = poisoned<float>(set, extent3{8, 6, 4});
  vox::volume<float> empty;
  auto expect_bad = [&](auto&& f, const char* why) {
    SCOPED_TRACE(why);
    EXPECT_THROW(f(), vox::invalid_argument);
  };
  expect_bad([&] { vox::binary_erosion(set, in, other); }, "extent mismatch");
  expect_bad([&] { vox::binary_dilation(set, empty, out); }, "empty input");
  expect_bad([&] { vox::binary_dilation(set, in, empty); }, "empty output");
  expect_bad([&] { vox::binary_erosion(set, out, out); }, "in place");
  expect_bad([&] { vox::binary_erosion(set, in, out, structuring_element::box({3, 4, 3})); },
             "even box size");
  expect_bad([&] { vox::binary_erosion(set, in, out, structuring_element::box({3, 3, 0})); },
             "zero box size");
  expect_bad([&] { vox::binary_opening(set, in, out, structuring_element::cross(), 0); },
             "zero iterations");
  expect_bad([&] { vox::binary_closing(set, in, out, structuring_element::cross(), -1); },
             "negative iterations (scipy's until-no-change)");
  expect_bad(
      [&] {
        vox::binary_dilation(set, in, out, structuring_element::ball(vox::max_ball_radius + 1));
      },
      "ball radius over the limit");
  structuring_element bad_dims = structuring_element::cross();
  bad_dims.dims = 1;
  expect_bad([&] { vox::binary_dilation(set, in, out, bad_dims); }, "dims 1");
  structuring_element bad_kind = structuring_element::cross();
  bad_kind.kind = static_cast<shape>(7);
  expect_bad([&] { vox::binary_dilation(set, in, out, bad_kind); }, "unknown shape");
  // A 2D box ignores its z size, even an even one.
  EXPECT_NO_THROW(vox::binary_erosion(set, in, out,
                                      structuring_element::box({3, 3, 2}, 2)));
  vox::volume<float> untouched = poisoned<float>(set, e);
  EXPECT_THROW(vox::binary_erosion(set, in, untouched, structuring_element::ball(1000)),
               vox::invalid_argument);
  for (float v : fetch(set, untouched)) ASSERT_TRUE(std::isnan(v));
  // The maximum radius is accepted.
  EXPECT_NO_THROW(vox::binary_dilation(set, in, out,
                                       structuring_element::ball(vox::max_ball_radius, 1, 1)));
}

}  // namespace
