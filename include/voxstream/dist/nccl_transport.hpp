/// @file nccl_transport.hpp
/// @brief vox::dist::nccl_transport: halo transfers and the combines' collectives through NCCL
///        (issue 6). Built only when NCCL (>= 2.7) was found at configure time, on the cuda
///        backend: VOXSTREAM_HAS_NCCL is then 1 (voxstream/config.hpp); otherwise this header
///        declares nothing. from_mpi exists when MPI was found too (VOXSTREAM_HAS_MPI).
///
/// The transport owns one NCCL communicator per local device, that is one rank per device.
/// Partitions on the same device share its rank, and a transfer between two of them is an NCCL
/// send/recv to self; that is what lets the multi-GPU path run on one GPU. A transfer is an
/// ncclSend on the sender's stream and an ncclRecv on the receiver's, between ncclGroupStart in
/// begin() and ncclGroupEnd in end(), where NCCL enqueues them; vox::dist orders both streams
/// through the ledgers before begin() and records them after end(). NCCL makes every stream of
/// a group wait for the group, and the group for every stream (NCCL's "multiple streams within
/// a group"); that only adds order. Collectives (all_reduce, reduce) take one part per local
/// rank. Errors from NCCL throw vox::dist::nccl_error naming the call and NCCL's error string.
/// Not thread-safe: one transport, one host thread.
#pragma once

#include <voxstream/config.hpp>

#if VOXSTREAM_HAS_NCCL

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/dist/partitioned_volume.hpp>

#if VOXSTREAM_HAS_MPI
#include <mpi.h>
#endif

namespace vox::dist {

/// @brief An NCCL call failed; code() is its ncclResult_t.
class nccl_error : public error {
 public:
  nccl_error(const std::string& what, int code) : error(what), code_(code) {}
  /// @brief The ncclResult_t value, as an int so that this header needs no nccl.h.
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

/// @brief The bytes of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES): what rank 0 makes and every rank
///        of a communicator spanning processes needs.
struct nccl_unique_id {
  char bytes[128];
};

/// @brief A collective_transport over NCCL (see the file comment). Move-only.
class nccl_transport final : public collective_transport {
 public:
  /// @brief One process, every local GPU: ncclCommInitAll over devices 0..device_count()-1.
  ///        Blocks while the communicators are set up. Throws vox::invalid_argument without a
  ///        GPU, nccl_error if NCCL fails or is older than 2.7 at run time.
  nccl_transport();
  /// @brief One process, these devices (rank i on devices[i]): ncclCommInitAll. Blocks while
  ///        the communicators are set up. Throws vox::invalid_argument, before any NCCL call,
  ///        for no device, an id that is not a device (naming it and the device count), or a
  ///        device listed twice; nccl_error as above.
  explicit nccl_transport(const std::vector<int>& devices);
  /// @brief Rank `rank` of a communicator of `ranks` ranks spanning processes, on `device`:
  ///        ncclCommInitRank with `id` (made by one rank with new_unique_id() and sent to the
  ///        others). Blocks until every rank has joined. Throws vox::invalid_argument for a rank
  ///        outside [0, ranks) or a bad device, nccl_error as above.
  nccl_transport(const nccl_unique_id& id, int rank, int ranks, int device);
  /// @brief A new communicator id (ncclGetUniqueId). Host only.
  [[nodiscard]] static nccl_unique_id new_unique_id();
#if VOXSTREAM_HAS_MPI
  /// @brief One process per GPU: every process of `comm` calls this collectively. Rank 0 makes
  ///        the id, MPI_Bcast sends it, and each process joins with its MPI rank on the GPU of
  ///        its rank among the processes of its node (MPI_COMM_TYPE_SHARED). Blocks. Throws
  ///        vox::invalid_argument on every process when some node runs more processes than it
  ///        has GPUs, vox::error if an MPI call fails, nccl_error as above.
  [[nodiscard]] static nccl_transport from_mpi(MPI_Comm comm);
#endif
  /// @brief Destroys the communicators (ncclCommDestroy, which may wait for their work).
  ~nccl_transport() override;
  nccl_transport(nccl_transport&&) noexcept;
  nccl_transport& operator=(nccl_transport&&) noexcept;
  nccl_transport(const nccl_transport&) = delete;
  nccl_transport& operator=(const nccl_transport&) = delete;

  [[nodiscard]] const char* name() const noexcept override { return "nccl"; }
  [[nodiscard]] bool two_sided() const noexcept override { return true; }
  /// @brief ncclGroupStart. Asynchronous.
  void begin() override;
  /// @brief ncclSend of t.bytes on t.from.stream to the rank of t.to.device, and the matching
  ///        ncclRecv on t.to.stream; outside begin()/end() in a group of its own. Asynchronous.
  ///        Throws as check().
  void post(const transfer& t) override;
  /// @brief ncclGroupEnd: NCCL enqueues what was posted. Asynchronous.
  void end() override;
  /// @brief Throws vox::invalid_argument unless both devices of `t` have a rank here.
  void check(const transfer& t) const override;

  [[nodiscard]] std::vector<int> devices() const override;
  [[nodiscard]] std::size_t ranks() const noexcept override;
  /// @brief This process's rank on `device` in the communicator. Throws vox::invalid_argument
  ///        if the device has none.
  [[nodiscard]] int rank_of(int device) const;
  /// @brief ncclAllReduce of each part, in one group. Asynchronous.
  void all_reduce(const std::vector<reduce_part>& parts, std::size_t count, reduce_type type,
                  reduce_op op) override;
  /// @brief ncclReduce of each part to the rank of parts[root], in one group. Asynchronous.
  void reduce(const std::vector<reduce_part>& parts, std::size_t root, std::size_t count,
              reduce_type type, reduce_op op) override;

 private:
  struct impl;
  [[nodiscard]] impl& self(const char* op) const;  // throws on a moved-from transport
  std::unique_ptr<impl> impl_;
};

}  // namespace vox::dist

#endif  // VOXSTREAM_HAS_NCCL
