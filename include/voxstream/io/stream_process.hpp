/// @file stream_process.hpp
/// @brief Out-of-core slab streaming: vox::stream_process runs a pipeline of ops over a volume
///        that need not fit on the GPU, slab by slab, overlapping the copies with the compute.
///
/// The volume is cut along z into slabs of `slab_depth` output slices (thinner at both ends with
/// stream_options::ramp; one slab takes what remains). Slab k computes output slices [z0, z1)
/// from input slices [z0 - halo, z1 + halo), clamped to the volume. For each slab
///  1. the input slices not already on the device are read from the source into a pinned host
///     buffer (on the host, by the caller's thread; skipped for a source in page-locked memory,
///     which is copied from directly);
///  2. those slices are copied host-to-device on the run's upload stream into the slab's device
///     buffer, while the slices it shares with the previous slab (its lower halo and whatever
///     else overlaps) are copied device-to-device from the previous slab's buffer on the set's
///     first stream: every input slice crosses the bus exactly once;
///  3. `pipeline` processes the slab on the stream set, ordered after both copies by events only
///     (the per-slice ledger of the device buffers);
///  4. the output slices [z0, z1) are copied device-to-host on the run's download stream into a
///     pinned host buffer (or straight into a sink in page-locked memory); and
///  5. handed to the sink from the pinned buffer once the download's event has completed.
/// A ring of `stream_options::buffers` slab buffers, on the device and in pinned host memory, all
/// allocated once before the first slab, lets slab k+1 upload and slab k-1 download while slab k
/// computes. Device buffers are reused through their ledgers (each upload waits on the previous
/// readers of its buffer, each pipeline on the previous download), pinned buffers through events.
/// The first and last slabs are thinner (their halo is clamped); the device buffers take those
/// shapes in place with volume::reshape, without reallocating.
///
/// Because each slab carries `halo` true neighbour slices on each side (and the volume's own ends
/// are real ends), a pipeline of filters whose z radii sum to at most `halo` gives exactly the
/// result of processing the whole volume at once (the same kernels run on the same values). The
/// halo may not exceed the volume's depth; a halo equal to it already gives every slab the whole
/// volume, so pass min(sum of z radii, depth).
///
/// Host waits (the only ones; nothing synchronises the device or a whole stream):
///  - before slab k is enqueued, on the download event of slab k - buffers (whose pinned output
///    buffer slab k reuses; its slices then go to the sink);
///  - before the source refills a pinned input buffer, on the event of the upload that last read
///    it (already complete by then in practice: that upload preceded the download above);
///  - after the last slab, on the remaining download events, in order (then on the last upload
///    events, complete by then);
///  - on an error, on every upload and download event still in flight (so that no copy outlives
///    a host buffer).
/// Allocating and freeing pinned host memory are synchronising CUDA calls: they happen once
/// before the first slab and once after the last, and not at all when the source and the sink
/// are both in page-locked memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/core/extent.hpp>
#include <voxstream/core/z_range.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/format.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/volume.hpp>

namespace vox {

/// @brief Where stream_process reads input slices from. `read(z0, z1, dst)` fills `dst` with
///        slices [z0, z1) (contiguous, x fastest, native byte order); stream_process calls it on
///        the caller's thread, for each slice exactly once, in increasing z, and it may block
///        (file I/O). Copyable; copies share state (an open file), so one source serves one run
///        at a time.
template <class T>
struct slab_source {
  extent3 extent{};
  std::string name;  ///< for error messages ("host memory", a file name, ...)
  vec3d spacing{1.0, 1.0, 1.0};
  vec3d origin{0.0, 0.0, 0.0};
  std::function<void(std::size_t z0, std::size_t z1, T* dst)> read;
  /// Optional: the whole volume in page-locked host memory (extent.voxels() voxels, unchanged
  /// during the run). stream_process then uploads from it directly and never calls `read`.
  const T* pinned{nullptr};
};

/// @brief Where stream_process writes output slices to. `write(z0, z1, src)` receives slices
///        [z0, z1) of the result, in increasing z0, each exactly once; `finish()` is called
///        after the last slab (a file sink renames its temporary file over the target there, so
///        a failed run leaves no partial file). A run that fails after its first slab was
///        enqueued calls `abort()` instead (a file sink removes its temporary file there); a run
///        rejected before that (bad arguments, out of memory) calls neither, so the sink can be
///        used again. Any callback may be empty; a sink without `write` and `pinned` discards
///        the result (nothing is downloaded: for pipelines that keep what they need on the
///        device, such as a projection accumulated across slabs).
template <class T>
struct slab_sink {
  extent3 extent{};
  std::string name;
  std::function<void(std::size_t z0, std::size_t z1, const T* src)> write;
  std::function<void()> finish;
  std::function<void()> abort;
  /// Optional: the destination in page-locked host memory (extent.voxels() voxels).
  /// stream_process then downloads into it directly and never calls `write`.
  T* pinned{nullptr};
};

/// @brief A source over `count` voxels of host memory laid out as `e` (not copied: it must
///        outlive the stream_process call). If the memory is page-locked (cudaHostAlloc,
///        cudaHostRegister), `pinned` is set and slabs are uploaded from it directly. Throws
///        vox::invalid_argument (null data, count != e.voxels(), an empty extent, device memory).
template <class T>
[[nodiscard]] slab_source<T> host_source(const T* data, std::size_t count, extent3 e);
/// @brief A source over a pinned host volume, uploaded from directly. Blocks the host until the
///        transfers in flight that write `v` have completed (v.synchronize()); enqueue none
///        until the run is over. Throws vox::invalid_argument for an empty volume.
template <class T>
[[nodiscard]] slab_source<T> host_source(const host_volume<T>& v);

/// @brief A source over a file: raw (with `layout`), NRRD or MetaImage with raw encoding are
///        memory-mapped (mmap) and byte-swapped if their byte order is not native; gzip files
///        are decoded in one pass over the run; TIFF stacks are read slab by slab with
///        read_voxels(). The file's voxel type must be T. Spacing and origin come from the
///        header. Blocks (reads the header). Throws io::io_error naming the file.
template <class T>
[[nodiscard]] slab_source<T> file_source(const std::filesystem::path& path);
template <class T>
[[nodiscard]] slab_source<T> raw_file_source(const std::filesystem::path& path,
                                             const io::raw_layout& layout);

/// @brief A sink into host memory (`count` must equal e.voxels()); page-locked memory is
///        downloaded into directly (see host_source). Throws vox::invalid_argument.
template <class T>
[[nodiscard]] slab_sink<T> host_sink(T* data, std::size_t count, extent3 e);
/// @brief A sink into a pinned host volume, downloaded into directly. Blocks the host until the
///        transfers in flight that touch `v` have completed (v.synchronize()); enqueue none until
///        the run is over. Throws vox::invalid_argument for an empty volume.
template <class T>
[[nodiscard]] slab_sink<T> host_sink(host_volume<T>& v);

/// @brief A sink into a raw, NRRD or MetaImage file (format from the extension or opt.format;
///        attached or detached; raw or gzip encoding; opt.order), written in z order under a
///        temporary name in the target's directory and renamed over `path` by finish(), so that
///        `path` is either untouched or complete. Blocks (creates the temporary file and writes
///        the header). Throws vox::invalid_argument (bad options, TIFF or PNG) before touching
///        any file, io::io_error. The temporary is removed by abort() or when the last copy of
///        the sink is destroyed unfinished.
template <class T>
[[nodiscard]] slab_sink<T> file_sink(const std::filesystem::path& path, extent3 e,
                                     const io::write_options& opt = {});

/// @brief The pipeline applied to each slab: `in` holds the input slab with its halo, `out`
///        (same extent) receives the result; only the slab's own slices of `out` are kept. Only
///        ops that enqueue work on `streams` may be called; they must not wait on the host.
///        Temporaries the pipeline allocates are not counted in the device budget (reuse them
///        across slabs with volume::reshape to avoid an allocation per slab).
template <class In, class Out>
using slab_pipeline =
    std::function<void(stream_set& streams, const volume<In>& in, volume<Out>& out)>;

/// @brief Where the slab a pipeline is given lies in the volume.
struct slab_position {
  std::size_t index{0};  ///< the slab's place in the run, 0-based
  std::size_t count{0};  ///< slabs in the run
  z_range out;           ///< its own output slices, in the volume's z
  z_range in;            ///< its input slices, halo included, in the volume's z (`in`'s slice 0)
  /// @brief Halo slices below `out` at the start of the input volume (0 at the volume's start).
  [[nodiscard]] std::size_t halo_lo() const noexcept { return out.z0 - in.z0; }
  /// @brief Halo slices above `out` at the end of the input volume (0 at the volume's end).
  [[nodiscard]] std::size_t halo_hi() const noexcept { return in.z1 - out.z1; }
};

/// @brief A pipeline that is also told which slab it has (slab_position): for per-slab work that
///        depends on z, such as cropping the slab's own slices out of the haloed result or
///        writing a slab of a larger target.
template <class In, class Out>
using slab_pipeline_at = std::function<void(stream_set& streams, const volume<In>& in,
                                            volume<Out>& out, const slab_position& where)>;

/// @brief Knobs of stream_process.
struct stream_options {
  /// Device memory stream_process may allocate for its slab buffers, in bytes (0: no limit):
  /// buffers x (slab_depth + 2 halo, at most the volume's depth) slices x (sizeof(In) +
  /// sizeof(Out)). If it does not fit, slab_depth is reduced until it does; if not even one
  /// slice plus halo fits, vox::out_of_memory is thrown before any work.
  std::size_t device_budget_bytes{0};
  std::size_t buffers{3};  ///< slabs in flight (ring depth), >= 2
  /// Called on the caller's thread after each slab reached the sink: (slabs done, slabs total).
  std::function<void(std::size_t slabs_done, std::size_t slabs_total)> progress;
  /// Thinner slabs at both ends, when the volume holds at least four slabs of slab_depth and
  /// slab_depth >= 4: the first two slabs are a quarter and a half of slab_depth deep, the last
  /// two a half and a quarter. The first download then starts after a thin slab's upload and
  /// compute, and the last download (after the last upload, overlapped with nothing) is short.
  /// The buffers and the budget are those of slab_depth; each slice still crosses once.
  bool ramp{true};
};

/// @brief What a stream_process run did.
struct stream_report {
  std::size_t slabs{0};
  std::size_t slab_depth{0};    ///< the depth used (at most the volume's; after the budget)
  std::size_t buffers{0};       ///< ring depth used (at most the number of slabs)
  std::size_t device_bytes{0};  ///< device memory of the slab buffers
  std::size_t pinned_bytes{0};  ///< pinned host memory of the ring (0 for page-locked endpoints)
  std::uint64_t bytes_uploaded{0};    ///< host to device (each input voxel once)
  std::uint64_t bytes_downloaded{0};  ///< device to host (each output voxel once; 0: discarded)
  double seconds{0};                  ///< wall time of the whole run, allocation included
};

/// @brief The output slices [z0, z1) of each slab, in order, that stream_process cuts a volume
///        of `slices` slices into for a slab depth of `slab_depth` (the depth it uses: see
///        stream_report::slab_depth) and stream_options::ramp `ramp`. For pipelines that need to
///        know which slab they are given (the k-th call gets the k-th range; its input adds up to
///        `halo` slices either side, clamped to the volume). Pure. Throws vox::invalid_argument
///        for slab_depth 0.
[[nodiscard]] std::vector<z_range> slab_ranges(std::size_t slices, std::size_t slab_depth,
                                              bool ramp = true);

/// @brief Streams `source` through `pipeline` into `sink`, slab by slab (see the file comment).
///        Blocks until the sink has every slice. Throws vox::invalid_argument (mismatched
///        extents, slab_depth 0, halo larger than the volume, an empty source or pipeline,
///        buffers < 2) and vox::out_of_memory (budget too small, or allocation failed) before any
///        work, with the sink untouched; errors of the source, sink or pipeline propagate after
///        the copies in flight have drained, with the sink's abort() called instead of finish().
template <class In, class Out>
stream_report stream_process(const slab_source<In>& source, slab_sink<Out>& sink,
                             std::size_t slab_depth, std::size_t halo,
                             const slab_pipeline<In, Out>& pipeline, stream_set& streams,
                             const stream_options& opts = {});

/// @brief stream_process with a pipeline that is told each slab's position (slab_position).
template <class In, class Out>
stream_report stream_process(const slab_source<In>& source, slab_sink<Out>& sink,
                             std::size_t slab_depth, std::size_t halo,
                             const slab_pipeline_at<In, Out>& pipeline, stream_set& streams,
                             const stream_options& opts = {});

}  // namespace vox
