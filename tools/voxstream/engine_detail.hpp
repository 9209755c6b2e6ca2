/// @file engine_detail.hpp
/// @brief Internal to the engine (engine.hpp): the two ways execute() runs an op list, and the
///        helpers that they and file_stats share.
#pragma once

#include <cstddef>
#include <utility>

#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/format.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/io/stream_process.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/volume.hpp>

#include "engine.hpp"
#include "ops_table.hpp"

namespace vox::cli {

/// @brief Sets v's spacing and origin.
template <class T>
void set_geometry(volume<T>& v, const geometry& g) {
  v.set_spacing(g.spacing);
  v.set_origin(g.origin);
}

/// @brief The spacing and origin of a file.
[[nodiscard]] inline geometry geometry_of_info(const io::volume_info& info) {
  return {info.spacing, info.origin};
}

/// @brief `v` downloaded to host memory; blocks until it is there.
template <class T>
[[nodiscard]] io::any_host_volume to_host(stream_set& s, const volume<T>& v) {
  host_volume<T> h(v.extent());
  download(s, v, h);
  h.synchronize();
  return io::any_host_volume(std::move(h));
}

/// @brief The input file as a slab source; with [z0, z1) other than the whole depth only those
///        slices (a crop along z at the start of a streamed run reads nothing else).
template <class In>
[[nodiscard]] slab_source<In> make_source(const input_spec& in, std::size_t z0, std::size_t z1) {
  slab_source<In> src = in.raw ? raw_file_source<In>(in.path, *in.raw) : file_source<In>(in.path);
  if (z0 == 0 && z1 == src.extent.z) return src;
  auto inner = src.read;
  src.read = [inner, z0](std::size_t a, std::size_t b, In* dst) { inner(a + z0, b + z0, dst); };
  src.extent.z = z1 - z0;
  src.origin.z += static_cast<double>(z0) * src.spacing.z;
  src.pinned = nullptr;
  return src;
}

/// @brief The voxels of an input file in host memory (a raw input by its layout); blocks.
[[nodiscard]] io::any_host_volume read_input(const input_spec& in, const io::volume_info& info);

/// @brief `host` in a new device volume with the spacing and origin of `info`. Asynchronous:
///        `host` (pinned) must outlive the copy (keep it until the stream set is synchronized).
[[nodiscard]] any_volume upload_input(stream_set& s, const io::any_host_volume& host,
                                      const io::volume_info& info);

/// @brief Runs `opt.ops` on the whole volume in device memory (run_in_memory.cpp); blocks.
[[nodiscard]] run_result run_in_memory(const run_options& opt, const io::volume_info& info,
                                       stream_set& s);

/// @brief Runs `opt.ops` slab by slab through vox::stream_process, with a slab depth that fits
///        `budget` (run_streamed.cpp); blocks.
[[nodiscard]] run_result run_streamed(const run_options& opt, const io::volume_info& info,
                                      stream_set& s, std::size_t budget);

}  // namespace vox::cli
