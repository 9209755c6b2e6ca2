/// @file engine.hpp
/// @brief What the `voxstream` commands run: an op list over a volume, in device memory when it
///        fits the budget (run_in_memory.cpp) and slab by slab through vox::stream_process when
///        it does not (run_streamed.cpp), and the value statistics of a file (file_stats.cpp).
///        Blocking (file I/O and results on the host). Ops are run through the op table
///        (op_dispatch.hpp).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/format.hpp>
#include <voxstream/ops/reduce.hpp>

#include "op_list.hpp"
#include "progress.hpp"

namespace vox::cli {

/// @brief An input file: any format probe() knows, or a headerless raw file with its layout.
struct input_spec {
  std::filesystem::path path;
  std::optional<io::raw_layout> raw;
};

/// @brief The file's header (or raw_info for a raw layout); blocks. Throws io_error.
[[nodiscard]] io::volume_info probe_input(const input_spec& in);

/// @brief Device memory to use when --budget is not given: on the cuda backend 80% of the free
///        device memory (cudaMemGetInfo), on the host backend 1 GiB.
[[nodiscard]] std::size_t default_budget();

/// @brief Whether a run streams.
enum class stream_choice {
  automatic,  ///< when the in-memory run's estimated device memory exceeds the budget
  always,
  never,
};

/// @brief Knobs of execute().
struct run_options {
  input_spec input;
  std::vector<op_spec> ops;
  std::filesystem::path output;  ///< where a streamed run without projection writes its result
  std::size_t budget{0};         ///< device bytes (0: default_budget())
  std::size_t streams{8};
  stream_choice streaming{stream_choice::automatic};
  std::size_t slab_depth{0};  ///< streamed: output slices per slab (0: the most that fit)
  progress_mode progress{progress_mode::automatic};
  std::string label{"run"};
  /// Writes a result held in host memory (in-memory runs, projections, downsampling) to
  /// `output`; execute() calls it last, as one step of an in-memory run's progress. Empty: the
  /// caller writes run_result::image itself.
  std::function<void(const io::any_host_volume&, const geometry&)> write;
};

/// @brief What execute() did and produced.
struct run_result {
  bool streamed{false};
  std::size_t passes{0};      ///< streamed: passes over the input (1 + one per --normalize)
  std::size_t slabs{0};       ///< streamed: slabs of the last pass
  std::size_t slab_depth{0};  ///< streamed: output slices per slab
  std::size_t halo{0};        ///< streamed: halo slices on each side of a slab
  std::size_t budget{0};
  dtype type{dtype::uint8};   ///< of the result
  extent3 extent{};           ///< of the result
  geometry geo{};             ///< of the result
  /// The result, when it is in host memory (in-memory runs, and streamed runs that end in a
  /// projection or downsampling); empty when a streamed run wrote `output` itself.
  std::optional<io::any_host_volume> image;
};

/// @brief Runs `opt.ops` over `opt.input`; blocks. Checks the op list, the output format (from
///        its extension) and that the output can be created before any work, and sweeps stale
///        temporaries of the output (output_guard.hpp). In-memory runs show their progress in
///        steps (reading, each op, the result to the host, writing), streamed runs in slabs.
///        Throws usage_error, output_error, io_error, vox::error.
[[nodiscard]] run_result execute(const run_options& opt);

/// @brief Writes `v` (the result of execute) to `path` with spacing and origin `geo`; blocks.
void write_result(const std::filesystem::path& path, const io::any_host_volume& v,
                  const geometry& geo);

/// @brief Value statistics of a file (NaN ignored by min and max).
struct value_stats {
  std::size_t count{0};
  double min{0};
  double max{0};
  double mean{0};
  double stddev{0};
  std::size_t slabs{0};
};

/// @brief Reads the voxels of `input` (described by `info`) slab by slab through
///        vox::file_source (at most half of `budget` and 256 MiB per slab), reduces each slab on
///        the device (vox::statistics) and combines them; blocks.
[[nodiscard]] value_stats file_stats(const input_spec& input, const io::volume_info& info,
                                     std::size_t budget, std::size_t streams,
                                     progress_mode progress);

}  // namespace vox::cli
