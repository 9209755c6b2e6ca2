// bench_ops: a tiny registry and timer for the op benchmarks (CUDA backend only).
// Each family of ops adds a file bench/ops/<family>.cu with
//   VOXBENCH_REGISTER(my_family) { ctx.add({...}); }
// main.cu times every registered case on 512^3 float32 and uint16 volumes with CUDA events:
// warm-up, median of >= 20 runs, inputs rotated among several volumes so L2 cannot serve them,
// and reports ms, GB/s and the fraction of the device-to-device copy bandwidth measured in the
// same run.
#pragma once

#include <cstddef>
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

using family_fn = void (*)(context&);
/// @brief Registers a family at static-initialisation time.
int register_family(const char* name, family_fn fn);

}  // namespace voxbench

#define VOXBENCH_REGISTER(family)                                                       \
  static void voxbench_family_##family(::voxbench::context& ctx);                       \
  [[maybe_unused]] static const int voxbench_reg_##family =                              \
      ::voxbench::register_family(#family, &voxbench_family_##family);                   \
  static void voxbench_family_##family(::voxbench::context& ctx)
