/// @file partitioned_volume.hpp
/// @brief Slab decomposition of a volume over several stream sets (issue 6, the part that runs
///        without several GPUs): partition_plan, partitioned_volume<T>, halo exchange behind a
///        transport, per-partition ops (apply) and whole-volume combines.
///
/// A partitioned_volume<T> splits nz slices into P contiguous, balanced ranges. Partition p is
/// an ordinary vox::volume<T> on its own vox::stream_set, holding its owned slices plus `halo`
/// copies of the neighbours' slices on each side where a neighbour exists (clamped at the
/// volume's ends). Each set stands for one device: the current one, or the device given per
/// partition (several partitions may share a device, which is how the multi-GPU path is tested
/// on one GPU). Work on partition p's set must run with its device current (device_scope);
/// everything in vox::dist does that itself, apply() included.
///
/// exchange_halos() copies each partition's boundary owned slices into its neighbours' halo
/// slices through a vox::dist::transport: copy_transport (cudaMemcpyAsync, or
/// cudaMemcpyPeerAsync across devices, on the receiving partition's stream; memcpy on the host
/// backend) or, when built with NCCL, nccl_transport (dist/nccl_transport.hpp: grouped
/// ncclSend/ncclRecv, one side per stream). Transfers are ordered by the per-slice ledgers
/// through exec::run_op, with no host wait; cross-set ordering works because ledger marks carry
/// their stream. apply() then runs the same per-partition op everywhere and keeps the owned
/// slices. sum, min_value, max_value and histogram combine on the host, or, through a
/// collective_transport, fold each device's partitions on the device and all-reduce there;
/// max_projection_z combines on partition 0 (copies, or a reduce of the collective transport).
/// With P > 1, a partition must own at least `halo` slices (a halo comes from one neighbour
/// only): partition_plan rejects thinner partitions with vox::invalid_argument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/extent.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/core/z_range.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/format.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume.hpp>

namespace vox::dist {

/// @brief A half-open range of global z-slices [z0, z1): the library's vox::z_range.
using slice_range = vox::z_range;

/// @brief One partition of a plan: the slices it owns and those it holds (owned plus halos).
struct partition {
  std::size_t index{0};
  slice_range owned;  ///< global slices this partition computes
  slice_range held;   ///< global slices its volume stores: owned plus clamped halos
  /// @brief Halo slices below / above the owned range (0 at the volume's ends).
  [[nodiscard]] std::size_t halo_lo() const noexcept { return owned.z0 - held.z0; }
  [[nodiscard]] std::size_t halo_hi() const noexcept { return held.z1 - owned.z1; }
  /// @brief The owned slices in the partition volume's own (local) z coordinates.
  [[nodiscard]] slice_range local_owned() const noexcept {
    return {halo_lo(), halo_lo() + owned.depth()};
  }
};

/// @brief One halo copy of an exchange, in local z coordinates of both partitions: slices
///        [src_z0, src_z0 + slices) of partition `src` go to [dst_z0, dst_z0 + slices) of `dst`.
struct halo_message {
  std::size_t src{0};
  std::size_t dst{0};
  std::size_t src_z0{0};
  std::size_t dst_z0{0};
  std::size_t slices{0};
};

/// @brief Pure slab-decomposition logic (host only, no device work): nz slices into P balanced
///        contiguous ranges (the first nz % P get one slice more), halos of width h clamped at
///        the ends, and the halo messages an exchange performs.
class partition_plan {
 public:
  /// @brief Throws vox::invalid_argument for nz == 0, P == 0, P > nz, or (P > 1 and h > 0) a
  ///        partition owning fewer than h slices.
  partition_plan(std::size_t nz, std::size_t partitions, std::size_t halo);

  [[nodiscard]] std::size_t slices() const noexcept { return nz_; }
  [[nodiscard]] std::size_t size() const noexcept { return parts_.size(); }
  [[nodiscard]] std::size_t halo() const noexcept { return halo_; }
  [[nodiscard]] const partition& operator[](std::size_t p) const { return parts_.at(p); }
  [[nodiscard]] const std::vector<partition>& partitions() const noexcept { return parts_; }
  /// @brief The partition that owns global slice z (z < slices()).
  [[nodiscard]] std::size_t owner_of(std::size_t z) const;
  /// @brief The copies exchange_halos makes, lower halos first, in partition order. Each halo
  ///        comes entirely from the owned slices of one neighbour.
  [[nodiscard]] std::vector<halo_message> messages() const;
  [[nodiscard]] bool operator==(const partition_plan& o) const noexcept;

 private:
  std::size_t nz_{0};
  std::size_t halo_{0};
  std::vector<partition> parts_;
};

/// @brief Number of devices partitions can be placed on: cudaGetDeviceCount (0 without a usable
///        driver or device), 1 on the host backend (device 0, the host).
[[nodiscard]] int device_count();

/// @brief Makes `device` the current device for the scope and restores the previous one at its
///        end (cudaSetDevice; nothing is synchronised). Throws vox::invalid_argument, naming the
///        id and the device count, for an id that is not a device (on the host backend, any id
///        but 0). Not movable.
class device_scope {
 public:
  explicit device_scope(int device);
  ~device_scope();
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  // Used only on the CUDA backend (the host backend has one device, nothing to switch).
  [[maybe_unused]] int previous_{0};
  [[maybe_unused]] bool changed_{false};
};

/// @brief Where one side of a transfer runs: partition, device, and the stream that side uses.
struct endpoint {
  std::size_t partition{0};
  int device{0};
  stream_view stream{native_stream{}};
};

/// @brief One transfer of `bytes` from device memory `src` (partition from) to `dst` (to).
struct transfer {
  endpoint from;
  endpoint to;
  const void* src{nullptr};
  void* dst{nullptr};
  std::size_t bytes{0};
};

/// @brief How halo bytes move between partitions. exchange_halos orders each transfer's streams
///        through the ledgers before begin() and records their completion after end(), so a
///        transport only enqueues (asynchronously) on the streams it is given.
///        One-sided transports (copy) enqueue the whole transfer on `to.stream`, and from.stream
///        is the same stream; two-sided ones (NCCL: send on from.stream, recv on to.stream,
///        between ncclGroupStart in begin() and ncclGroupEnd in end()) get the sender's stream.
class transport {
 public:
  virtual ~transport() = default;
  [[nodiscard]] virtual const char* name() const noexcept = 0;
  /// @brief True when the sending side runs on the sender's own stream (NCCL).
  [[nodiscard]] virtual bool two_sided() const noexcept = 0;
  /// @brief Starts a group of transfers (ncclGroupStart for NCCL). Asynchronous.
  virtual void begin() {}
  /// @brief Enqueues one transfer. Asynchronous.
  virtual void post(const transfer& t) = 0;
  /// @brief Ends the group: every transfer posted is enqueued on its streams. Asynchronous.
  virtual void end() {}
  /// @brief Throws vox::invalid_argument if post(t) could not move `t` (a device the transport
  ///        does not reach, streams of the wrong shape). Host only; the transfer helpers call it
  ///        for every transfer before they order or enqueue anything. The default accepts all.
  virtual void check(const transfer& t) const { (void)t; }
};

/// @brief Device-to-device copies on the receiving stream: cudaMemcpyAsync (cudaMemcpyDefault:
///        the pointers say where they are) on one device, cudaMemcpyPeerAsync across devices,
///        with the receiving device current; memcpy on the host backend. Asynchronous.
class copy_transport final : public transport {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "copy"; }
  [[nodiscard]] bool two_sided() const noexcept override { return false; }
  void post(const transfer& t) override;
  /// @brief One-sided: from.stream must be to.stream.
  void check(const transfer& t) const override;
};

/// @brief Element type of a collective (the ones the combines use; NCCL has each).
enum class reduce_type : std::uint8_t { uint8, int32, int64, uint64, float32, float64 };
/// @brief Size in bytes of one element of `t`.
[[nodiscard]] std::size_t reduce_type_size(reduce_type t) noexcept;
/// @brief Operation of a collective, elementwise.
enum class reduce_op : std::uint8_t { sum, min, max };

/// @brief One local rank's side of a collective: `count` elements at device pointer `send`, the
///        result at `recv` (may equal `send`: in place), enqueued on `at.stream`, whose device is
///        `at.device`; `at.partition` is the partition whose set owns the stream.
struct reduce_part {
  endpoint at;
  const void* send{nullptr};
  void* recv{nullptr};
};

/// @brief A transport with collectives (NCCL). Each local rank is one device; a collective
///        takes exactly one part per device of devices(), so the combines first fold the
///        partitions that share a device on that device. The communicator may span processes
///        (ranks() > devices().size()): the collectives then also combine the other processes'
///        parts, each process posting its own.
class collective_transport : public transport {
 public:
  /// @brief The devices of this process's ranks, one rank each, in rank order.
  [[nodiscard]] virtual std::vector<int> devices() const = 0;
  /// @brief Ranks in the communicator over all processes (devices().size() in one process).
  [[nodiscard]] virtual std::size_t ranks() const noexcept = 0;
  /// @brief recv of every part = `op` over every rank's `send`, `count` elements of `type`.
  ///        Asynchronous. Throws vox::invalid_argument, with nothing enqueued, unless `parts`
  ///        has one part per device of devices() with non-null buffers.
  virtual void all_reduce(const std::vector<reduce_part>& parts, std::size_t count,
                          reduce_type type, reduce_op op) = 0;
  /// @brief recv of parts[root] = `op` over every rank's `send`; other parts' recv untouched.
  ///        Asynchronous. Only when every rank is in this process (ranks() ==
  ///        devices().size()); throws vox::invalid_argument otherwise, or as all_reduce does.
  virtual void reduce(const std::vector<reduce_part>& parts, std::size_t root, std::size_t count,
                      reduce_type type, reduce_op op) = 0;
};

/// @brief A volume split into P z-slabs, each a vox::volume<T> (owned slices plus halos) on its
///        own stream set. Move-only. T: uint8, uint16, int16, int32, float, double.
template <class T>
class partitioned_volume {
 public:
  /// @brief Allocates one partition per set in `sets` (set p holds partition p; the sets must
  ///        outlive the volume). Asynchronous; halo and owned slices are value-initialised.
  ///        Throws vox::invalid_argument for an empty extent or a bad plan (see partition_plan).
  partitioned_volume(const std::vector<std::reference_wrapper<stream_set>>& sets, extent3 e,
                     std::size_t halo);
  /// @brief Creates `partitions` stream sets of `streams_per_partition` streams each, owned by
  ///        the volume, and a partition on each, all on the current device. Asynchronous apart
  ///        from creating the sets (pinned staging allocation).
  partitioned_volume(std::size_t partitions, std::size_t streams_per_partition, extent3 e,
                     std::size_t halo, stream_set_options opts = {});
  /// @brief One partition per entry of `devices`: partition p's set (owned by the volume, of
  ///        `streams_per_partition` streams) and storage are created on device devices[p];
  ///        entries may repeat (partitions sharing a device). The current device is restored
  ///        afterwards. Asynchronous apart from creating the sets. Throws vox::invalid_argument,
  ///        before creating anything, for an id that is not a device (the message names it and
  ///        the device count; on the host backend every id must be 0), and as the constructor
  ///        above. A named factory, so that `{1}` cannot mean "one partition" by mistake.
  [[nodiscard]] static partitioned_volume on_devices(const std::vector<int>& devices,
                                                     std::size_t streams_per_partition, extent3 e,
                                                     std::size_t halo,
                                                     stream_set_options opts = {});
  /// @brief Frees every partition with its device current.
  ~partitioned_volume();
  partitioned_volume(const partitioned_volume&) = delete;
  partitioned_volume& operator=(const partitioned_volume&) = delete;
  partitioned_volume(partitioned_volume&&) noexcept;
  partitioned_volume& operator=(partitioned_volume&&) noexcept;

  [[nodiscard]] const extent3& extent() const noexcept { return extent_; }
  [[nodiscard]] const partition_plan& plan() const noexcept { return plan_; }
  [[nodiscard]] std::size_t partitions() const noexcept { return plan_.size(); }
  [[nodiscard]] std::size_t halo() const noexcept { return plan_.halo(); }
  /// @brief Partition p's volume: extent {nx, ny, plan()[p].held.depth()}.
  [[nodiscard]] volume<T>& part(std::size_t p) { return parts_.at(p); }
  [[nodiscard]] const volume<T>& part(std::size_t p) const { return parts_.at(p); }
  /// @brief Partition p's stream set.
  [[nodiscard]] stream_set& streams(std::size_t p) const { return *sets_.at(p); }
  /// @brief The device of partition p (that of its set).
  [[nodiscard]] int device(std::size_t p) const { return sets_.at(p)->device(); }

  /// @brief Copies `count` (= extent().voxels()) voxels of pageable host memory into every
  ///        partition, halo slices included. Blocks the host until the data is staged (vox::upload).
  void scatter(const T* src, std::size_t count);
  /// @brief Copies the owned slices of every partition into `count` voxels of pageable host
  ///        memory. Blocks the host until the data is in `dst` (vox::download per partition).
  void gather(T* dst, std::size_t count) const;
  /// @brief Copies a whole volume of the same extent into every partition, halos included, on
  ///        the partitions' streams (copy transport), ordered by the ledgers. Asynchronous.
  void scatter(const volume<T>& src);
  /// @brief Copies every partition's owned slices into a whole volume of the same extent, on
  ///        the partitions' streams, ordered by the ledgers. Asynchronous.
  void gather(volume<T>& dst) const;

 private:
  struct devices_tag {};
  partitioned_volume(devices_tag, const std::vector<int>& devices,
                     std::size_t streams_per_partition, extent3 e, std::size_t halo,
                     stream_set_options opts);
  void release_() noexcept;
  extent3 extent_{};
  partition_plan plan_;
  std::vector<std::unique_ptr<stream_set>> owned_sets_;  // before parts_: destroyed after them
  std::vector<stream_set*> sets_;
  std::vector<volume<T>> parts_;
};

/// @brief Copies each partition's boundary owned slices into its neighbours' halo slices
///        (plan().messages()) through `t`. Every transfer is ordered with exec::run_op: the
///        stream waits on the last writers of the source slices and on the readers and writers
///        of the destination halo slices; afterwards the ledgers record the reads and writes.
///        Asynchronous. A no-op for one partition or halo 0. Bookkeeping per message: four
///        exec::run_op calls with no work (accesses declared before the group and again after
///        it, since a grouped transport enqueues only at end()), so four events, and one
///        redundant wait on the source's writer when it is on another stream.
template <class T>
void exchange_halos(partitioned_volume<T>& pv, transport& t);
/// @brief exchange_halos through a copy_transport. Asynchronous.
template <class T>
void exchange_halos(partitioned_volume<T>& pv);

/// @brief Runs a per-partition op `fn(stream_set&, const volume<T>& in_part, volume<Out>&
///        out_part)` on every partition, with the partition's device current, after exchanging
///        in's halos through `t` (when radius_z > 0 and there are several partitions). The owned
///        slices of `out` are then the op's result on the whole volume for any op whose z radius
///        is at most radius_z; out's halo slices are unspecified until exchange_halos(out).
///        Asynchronous as far as `fn` is. Throws vox::invalid_argument if radius_z > in.halo(),
///        the plans differ, or a partition of `out` is on another device than in's.
template <class T, class Out, class F>
void apply(partitioned_volume<T>& in, partitioned_volume<Out>& out, std::size_t radius_z, F&& fn,
           transport& t) {
  VOX_EXPECTS(in.plan() == out.plan() && in.extent() == out.extent(), "dist::apply",
              "input and output must have the same extent, partitions and halo");
  VOX_EXPECTS(radius_z <= in.halo(), "dist::apply",
              "the op's z radius " + std::to_string(radius_z) + " exceeds the halo width " +
                  std::to_string(in.halo()));
  for (std::size_t p = 0; p < in.partitions(); ++p)
    VOX_EXPECTS(in.device(p) == out.device(p), "dist::apply",
                "partition " + std::to_string(p) + " of the input is on device " +
                    std::to_string(in.device(p)) + ", of the output on device " +
                    std::to_string(out.device(p)));
  if (radius_z > 0 && in.partitions() > 1) exchange_halos(in, t);
  const partitioned_volume<T>& cin = in;
  for (std::size_t p = 0; p < in.partitions(); ++p) {
    const device_scope on(in.device(p));
    fn(in.streams(p), cin.part(p), out.part(p));
  }
}

/// @brief apply() with the halos exchanged through a copy_transport. Asynchronous as far as
///        `fn` is.
template <class T, class Out, class F>
void apply(partitioned_volume<T>& in, partitioned_volume<Out>& out, std::size_t radius_z, F&& fn) {
  copy_transport t;
  apply(in, out, radius_z, std::forward<F>(fn), t);
}

/// @brief Sum of the owned voxels of all partitions. Blocks the host: each partition's per-slice
///        sums (vox::reduce_slices, in double, enqueued on all partitions first) are downloaded
///        and added in z order on the host. Integer sums are exact while every slice's sum is
///        below 2^53 in magnitude; float sums agree with vox::sum to double rounding.
template <class T>
[[nodiscard]] sum_t<T> sum(const partitioned_volume<T>& pv);
/// @brief dist::sum through `t`. A collective_transport reduces on the devices: on each device
///        one thread adds its partitions' per-slice sums (int64 for integer voxels, as
///        sum_t<T>), the transport all-reduces them over its ranks (every process of its
///        communicator), and only partition 0's device's result is downloaded. Any other
///        transport: as dist::sum(pv). Blocks the host. Throws vox::invalid_argument, with
///        nothing enqueued, if the partitions' devices are not exactly t's devices().
template <class T>
[[nodiscard]] sum_t<T> sum(const partitioned_volume<T>& pv, transport& t);
/// @brief Smallest owned voxel (NaN ignored; only NaNs gives +inf). Blocks the host as dist::sum.
template <class T>
[[nodiscard]] T min_value(const partitioned_volume<T>& pv);
/// @brief min_value through `t` (an all-reduce of the per-device minima, in double, for a
///        collective_transport), as dist::sum(pv, t). Blocks the host.
template <class T>
[[nodiscard]] T min_value(const partitioned_volume<T>& pv, transport& t);
/// @brief Largest owned voxel (NaN ignored; only NaNs gives -inf). Blocks the host as dist::sum.
template <class T>
[[nodiscard]] T max_value(const partitioned_volume<T>& pv);
/// @brief max_value through `t`, as min_value(pv, t). Blocks the host.
template <class T>
[[nodiscard]] T max_value(const partitioned_volume<T>& pv, transport& t);

/// @brief Histogram of the owned voxels of all partitions, with vox::histogram's bins and rules
///        (`bins` equal bins over [lo, hi), outside and NaN not counted). Blocks the host: on each
///        partition's set it enqueues vox::histogram of the partition volume and of each halo
///        (copied into a small scratch volume), for all partitions first; then it downloads the
///        counts and combines them exactly: owned = held - halos, summed over partitions (the
///        all-reduce). Throws vox::invalid_argument as vox::histogram does.
template <class T>
[[nodiscard]] std::vector<std::uint64_t> histogram(const partitioned_volume<T>& pv,
                                                   std::size_t bins, double lo, double hi);
/// @brief dist::histogram through `t`. A collective_transport combines on the devices: on each
///        device a kernel folds its partitions' counts (held - halos), the transport
///        all-reduces the uint64 counts over its ranks, and partition 0's device's counts are
///        downloaded once every device's fold has completed. Any other transport: as
///        dist::histogram(pv, ...). Blocks the host. Throws vox::invalid_argument as
///        vox::histogram does, or as dist::sum(pv, t).
template <class T>
[[nodiscard]] std::vector<std::uint64_t> histogram(const partitioned_volume<T>& pv,
                                                   std::size_t bins, double lo, double hi,
                                                   transport& t);

/// @brief Maximum intensity projection along z of the whole volume into `out` (extent
///        {nx, ny, 1}; NaN ignored). Each partition projects its owned slices on its own set;
///        partitions 1..P-1 send their projection to partition 0's set through a copy_transport,
///        where an elementwise max combines them. Asynchronous. Throws vox::invalid_argument
///        for a wrong or empty `out`, or one on another device than partition 0.
template <class T>
void max_projection_z(const partitioned_volume<T>& pv, volume<T>& out);
/// @brief max_projection_z through `t`. With `out` on partition 0's device: a
///        collective_transport projects each device's partitions into one buffer on it (int32
///        for 16-bit voxels, which NCCL lacks), then reduces the buffers (max) into partition
///        0's device, or, when its communicator spans processes, all-reduces them so that every
///        process's `out` holds the projection of all of them. Any other transport carries the
///        projections to partition 0's set as copy_transport does. Asynchronous. Throws
///        vox::invalid_argument as max_projection_z(pv, out), or as dist::sum(pv, t).
template <class T>
void max_projection_z(const partitioned_volume<T>& pv, volume<T>& out, transport& t);

/// @brief Loads the volume in `path` (any format vox::io::probe reads: NRRD, MetaImage, TIFF)
///        into `pv`, each partition reading only its own held slices (owned plus halos) with
///        vox::io::read_voxels, then uploading them on its own set. Blocks (file I/O, pageable
///        uploads). The format, extent (must equal pv.extent()) and voxel type (must be T) are
///        checked before any partition is touched; an I/O error while reading partition p leaves
///        partitions before p loaded. Throws vox::io::io_error, vox::invalid_argument.
template <class T>
void scatter_file(partitioned_volume<T>& pv, const std::filesystem::path& path);

/// @brief Stores the owned slices of every partition in `path`, partition by partition in z
///        order, through vox::file_sink: written under a temporary name and renamed over `path`
///        at the end, so `path` is the old file or the whole new one. Blocks. Throws
///        vox::io::io_error, vox::invalid_argument (bad options), with no file left behind.
template <class T>
void gather_file(const partitioned_volume<T>& pv, const std::filesystem::path& path,
                 const io::write_options& opt = {});

}  // namespace vox::dist
