// bench_ops: a tiny registry and timer for the op benchmarks (CUDA backend only).
// Each family of ops adds a file bench/ops/<family>.cu with
//   VOXBENCH_REGISTER(my_family) { ctx.add({...}); }
// main.cu times every registered case on 512^3 float32 and uint16 volumes with CUDA events:
// warm-up, median of >= 20 runs, inputs rotated among several volumes so L2 cannot serve them,
// and reports ms, GB/s and the fraction of the device-to-device copy bandwidth measured in the
// same run. `bench_ops --sweep` runs the filter sweep of filter_sweep.cu instead, and
// `bench_ops --sets 1,32` every case on sets of several sizes side by side (sets.cu); see
// main.cu's usage. Families must size everything from ctx.ext and enqueue on *ctx.streams (or a
// set taken from it at registration): --sets registers them once per set and shape.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <voxstream/voxstream.hpp>

namespace voxbench {

/// @brief One benchmark case: `run(i)` enqueues one run on the set (i rotates the inputs);
///        `bytes` is the fewest bytes the op must move (each input read once, output written once).
struct bench_case {
  std::string name;   // e.g. "gaussian sigma=2"
  std::string dtype;  // "f32" or "u16"
  double bytes{0};
  std::function<void(int)> run;
};

/// @brief Inputs shared by all families: `rotate` random volumes of each type, and outputs.
struct context {
  vox::stream_set* streams{nullptr};
  vox::extent3 ext{512, 512, 512};
  std::vector<vox::volume<float>>* f32_in{nullptr};          // random in [0, 1)
  std::vector<vox::volume<std::uint16_t>>* u16_in{nullptr};  // random in [0, 4096)
  vox::volume<float>* f32_out{nullptr};
  vox::volume<std::uint16_t>* u16_out{nullptr};
  std::vector<bench_case> cases;
  /// @brief Rotated float input for run i.
  [[nodiscard]] const vox::volume<float>& f32(int i) const {
    return (*f32_in)[static_cast<std::size_t>(i) % f32_in->size()];
  }
  [[nodiscard]] const vox::volume<std::uint16_t>& u16(int i) const {
    return (*u16_in)[static_cast<std::size_t>(i) % u16_in->size()];
  }
  void add(bench_case c) { cases.push_back(std::move(c)); }
};

/// @brief The pieces of `s` between any of the characters of `seps`, spaces dropped, no empty
///        pieces ("a, b,,c" at "," gives a, b, c).
inline std::vector<std::string> split(const std::string& s, const char* seps) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (std::string(seps).find(ch) != std::string::npos) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (ch != ' ') {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// @brief Parses "512x512x300" (x by y by z), "512^3" or "512" (a cube). False if malformed.
inline bool parse_shape(const std::string& s, vox::extent3& e) {
  const std::size_t caret = s.find('^');
  if (caret != std::string::npos) {
    const long n = std::atol(s.substr(0, caret).c_str());
    if (n <= 0 || s.substr(caret + 1) != "3") return false;
    e = {static_cast<std::size_t>(n), static_cast<std::size_t>(n), static_cast<std::size_t>(n)};
    return true;
  }
  std::vector<long> n;
  for (const auto& t : split(s, "x")) n.push_back(std::atol(t.c_str()));
  if (n.size() == 1) n = {n[0], n[0], n[0]};
  if (n.size() != 3 || *std::min_element(n.begin(), n.end()) <= 0) return false;
  e = {static_cast<std::size_t>(n[0]), static_cast<std::size_t>(n[1]),
       static_cast<std::size_t>(n[2])};
  return true;
}

/// @brief "384x448x320".
inline std::string shape_name(const vox::extent3& e) {
  return std::to_string(e.x) + "x" + std::to_string(e.y) + "x" + std::to_string(e.z);
}

/// @brief Seeded, stateless random bits (splitmix64 of the index): the benches' voxels, never
///        all zeros, the same every run.
inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

using family_fn = void (*)(context&);
/// @brief Registers a family at static-initialisation time.
int register_family(const char* name, family_fn fn);
/// @brief Runs every registered family on `ctx`: appends their cases to ctx.cases.
void register_cases(context& ctx);
/// @brief --filter: true when `filter` is empty or `name` contains one of its '|'-separated parts.
[[nodiscard]] bool name_selected(const std::string& filter, const std::string& name);

/// @brief Exits with a message when `e` is an error (the harness's own CUDA calls).
void check(cudaError_t e, const char* what);

/// @brief Times an enqueue between events on a timing stream joined to every stream of the set:
///        from just before the op's first call to the join of every stream after it.
struct timer {
  vox::stream_set& set;
  cudaStream_t timing{};
  cudaEvent_t start{}, stop{}, fork{};
  std::vector<cudaEvent_t> joins;
  double host_us{0};         // host time of the last enqueue
  double median_host_us{0};  // median host enqueue time of the last median() call
  explicit timer(vox::stream_set& s);
  /// @brief One timed run, in ms. Blocks the host until it has finished.
  float once(const std::function<void()>& enqueue);
  /// @brief 3 warm-up runs, then the median of `reps` timed runs. Blocks the host.
  float median(int reps, const std::function<void(int)>& run);
};

/// @brief The filter sweep of issue 16 (bench/ops/filter_sweep.cu); see main.cu's usage.
struct sweep_options {
  std::string shapes{"512x512x300,512x512x512"};  // x x y x z, comma-separated
  std::string types{"u8,u16,f32"};
  std::string ops{"all"};  // case names or op names (see --sweep-list), comma-separated
  int max_reps{20};        // reps of a fast case (--reps)
  double slow_ms{20.0};    // a case whose probe run takes longer is "slow"...
  double cap_ms{1000.0};   // ...and gets cap_ms / probe reps, at least 5, at most max_reps
  int streams{32};
};
/// @brief Prints the sweep's case names, one a line (no GPU needed).
void list_filter_sweep();
/// @brief Runs the sweep on `set` and prints RESULT sweep lines, then the worst ratio to copy
///        of every op family. Blocks the host. Returns 0, or 2 for a bad option.
int run_filter_sweep(vox::stream_set& set, const sweep_options& o);

/// @brief bench_ops --sets (bench/ops/sets.cu); see main.cu's usage.
struct sets_options {
  std::string sets{"1,32"};                        // stream-set sizes, comma-separated
  std::string shapes{"384x448x320,512x512x512"};  // --shape: x x y x z, comma-separated
  std::string filter;                              // as --filter of the default mode
  int reps{20};
};
/// @brief Times every selected case on a stream_set of each size, per shape, on the same inputs,
///        and prints RESULT sets / sets_ratio lines and the summary against issue 17's targets.
///        Blocks the host. Returns 0, or 2 for a bad option.
int run_sets(const sets_options& o);

/// @brief bench_ops --segment (bench/ops/segment.cu); see main.cu's usage.
struct segment_options {
  std::string shape{"512x512x512"};  // --shape: x x y x z
  std::string write_dir;             // --write-masks: where to write the masks and values
  int reps{10};
};
/// @brief Times the segmentation ops (issue 20) on the blobs and phantom masks against a copy of
///        the mask, and prints RESULT segment lines. Blocks the host. Returns 0, or 2 for a bad
///        option.
int run_segment(vox::stream_set& set, const segment_options& o);

}  // namespace voxbench

#define VOXBENCH_REGISTER(family)                                                       \
  static void voxbench_family_##family(::voxbench::context& ctx);                       \
  [[maybe_unused]] static const int voxbench_reg_##family =                              \
      ::voxbench::register_family(#family, &voxbench_family_##family);                   \
  static void voxbench_family_##family(::voxbench::context& ctx)
