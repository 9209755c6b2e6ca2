// vox::dist::nccl_transport (dist/nccl_transport.hpp): NCCL communicators, grouped
// send/recv, the collectives, and the MPI bootstrap. Compiles to nothing without NCCL.
#include <voxstream/dist/nccl_transport.hpp>

#if VOXSTREAM_HAS_NCCL

#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>

#include "../detail/cuda_check.hpp"
#include "detail/devices.hpp"

namespace vox::dist {

namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(nccl_unique_id),
              "nccl_unique_id must hold an ncclUniqueId");

[[noreturn]] void throw_nccl(ncclResult_t r, ncclComm_t comm, const char* op, const char* call,
                             const char* file, int line) {
  std::string what = std::string(call) + " failed: " + ncclGetErrorString(r);
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') what += std::string(" (") + last + ")";
#else
  (void)comm;
#endif
  throw nccl_error(vox::detail::format_error(op, what, file, line), static_cast<int>(r));
}

/// Runs an NCCL call and throws nccl_error naming `op`, the call, file:line and NCCL's error.
#define VOX_NCCL_TRY(call, comm, op)                                    \
  do {                                                                  \
    const ncclResult_t vox_nccl_r_ = (call);                            \
    if (vox_nccl_r_ != ncclSuccess)                                     \
      throw_nccl(vox_nccl_r_, (comm), (op), #call, __FILE__, __LINE__); \
  } while (0)

ncclDataType_t nccl_type(reduce_type t) {
  switch (t) {
    case reduce_type::uint8:
      return ncclUint8;
    case reduce_type::int32:
      return ncclInt32;
    case reduce_type::int64:
      return ncclInt64;
    case reduce_type::uint64:
      return ncclUint64;
    case reduce_type::float32:
      return ncclFloat32;
    case reduce_type::float64:
      return ncclFloat64;
  }
  return ncclFloat64;
}

ncclRedOp_t nccl_op(reduce_op o) {
  switch (o) {
    case reduce_op::sum:
      return ncclSum;
    case reduce_op::min:
      return ncclMin;
    case reduce_op::max:
      return ncclMax;
  }
  return ncclSum;
}

/// NCCL at run time must have send/recv (2.7); the wheel found at run time may not be the
/// headers' version.
void check_runtime_version(const char* op) {
  int v = 0;
  VOX_NCCL_TRY(ncclGetVersion(&v), nullptr, op);
  // 2.7 is 2700 in the old encoding (major*1000 + minor*100 + patch); from 2.9 on it is
  // major*10000 + minor*100 + patch, larger still.
  if (v < 2700)
    throw nccl_error(
        vox::detail::format_error(
            op, "NCCL " + std::to_string(v) + " at run time is older than 2.7 (no send/recv)",
            __FILE__, __LINE__),
        static_cast<int>(ncclInvalidUsage));
}

/// Restores the current device on scope exit (NCCL's communicator setup may change it).
class restore_device {
 public:
  explicit restore_device(const char* op) { VOX_CUDA_TRY(cudaGetDevice(&device_), op); }
  ~restore_device() { VOX_CUDA_LOG(cudaSetDevice(device_), "dist::nccl_transport"); }
  restore_device(const restore_device&) = delete;
  restore_device& operator=(const restore_device&) = delete;

 private:
  int device_{0};
};

std::vector<int> all_devices() {
  const int n = device_count();
  VOX_EXPECTS(n > 0, "dist::nccl_transport", "no CUDA device is visible");
  std::vector<int> d(static_cast<std::size_t>(n));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

}  // namespace

struct nccl_transport::impl {
  std::vector<int> devices;       // local devices, one rank each
  std::vector<int> ranks;         // communicator rank of each local device
  std::vector<ncclComm_t> comms;  // communicator of each local device
  int size{0};                    // ranks in the communicator, over all processes
  int open_groups{0};             // begin() calls not yet ended

  impl() = default;
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  ~impl() {
    for (ncclComm_t c : comms) {
      if (c == nullptr) continue;
      const ncclResult_t r = ncclCommDestroy(c);
      if (r != ncclSuccess)
        vox::detail::log_error("dist::nccl_transport",
                               std::string("ncclCommDestroy: ") + ncclGetErrorString(r));
    }
  }

  /// Index of `device` among the local devices; throws vox::invalid_argument if it has none.
  std::size_t local(int device, const char* op, const std::string& what) const {
    const auto it = std::find(devices.begin(), devices.end(), device);
    if (it == devices.end()) {
      std::string list;
      for (int d : devices) list += (list.empty() ? "" : ", ") + std::to_string(d);
      VOX_FAIL(op, what + " is on device " + std::to_string(device) +
                       ", which has no rank in this transport (devices {" + list + "})");
    }
    return static_cast<std::size_t>(it - devices.begin());
  }

  /// Ends every group begun here, after a failure inside one; errors are NCCL's to report.
  void abandon_groups() noexcept {
    for (; open_groups > 0; --open_groups) (void)ncclGroupEnd();
  }

  /// One part per local device, each with buffers: throws vox::invalid_argument otherwise.
  void check_parts(const std::vector<reduce_part>& parts, std::size_t count, const char* op) const {
    VOX_EXPECTS(parts.size() == devices.size(), op,
                "got " + std::to_string(parts.size()) + " parts for " +
                    std::to_string(devices.size()) + " local ranks: one part per rank");
    std::vector<char> seen(devices.size(), 0);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::size_t l = local(parts[i].at.device, op, "part " + std::to_string(i));
      VOX_EXPECTS(
          seen[l] == 0, op,
          "two parts on device " + std::to_string(parts[i].at.device) + ": one part per rank");
      seen[l] = 1;
      VOX_EXPECTS(count == 0 || (parts[i].send != nullptr && parts[i].recv != nullptr), op,
                  "part " + std::to_string(i) + " has a null buffer");
    }
  }
};

nccl_transport::nccl_transport() : nccl_transport(all_devices()) {}

nccl_transport::nccl_transport(const std::vector<int>& devices) : impl_(std::make_unique<impl>()) {
  constexpr const char* op = "dist::nccl_transport";
  VOX_EXPECTS(!devices.empty(), op, "needs at least one device");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    detail::check_device(devices[i], op, "rank " + std::to_string(i) + ": ");
    VOX_EXPECTS(
        std::count(devices.begin(), devices.end(), devices[i]) == 1, op,
        "device " + std::to_string(devices[i]) + " is listed twice: NCCL has one rank per device");
  }
  check_runtime_version(op);
  impl& m = *impl_;
  m.devices = devices;
  m.ranks.resize(devices.size());
  std::iota(m.ranks.begin(), m.ranks.end(), 0);
  m.size = static_cast<int>(devices.size());
  m.comms.assign(devices.size(), nullptr);
  const restore_device keep(op);
  VOX_NCCL_TRY(ncclCommInitAll(m.comms.data(), m.size, m.devices.data()), nullptr, op);
}

nccl_transport::nccl_transport(const nccl_unique_id& id, int rank, int ranks, int device)
    : impl_(std::make_unique<impl>()) {
  constexpr const char* op = "dist::nccl_transport";
  VOX_EXPECTS(
      ranks > 0 && rank >= 0 && rank < ranks, op,
      "rank " + std::to_string(rank) + " of a communicator of " + std::to_string(ranks) + " ranks");
  detail::check_device(device, op, "rank " + std::to_string(rank) + ": ");
  check_runtime_version(op);
  impl& m = *impl_;
  m.devices = {device};
  m.ranks = {rank};
  m.size = ranks;
  m.comms.assign(1, nullptr);
  ncclUniqueId uid;
  std::memcpy(&uid, id.bytes, sizeof(uid));
  const restore_device keep(op);
  VOX_CUDA_TRY(cudaSetDevice(device), op);  // ncclCommInitRank uses the current device
  VOX_NCCL_TRY(ncclCommInitRank(&m.comms[0], ranks, uid, rank), nullptr, op);
}

nccl_unique_id nccl_transport::new_unique_id() {
  ncclUniqueId uid;
  VOX_NCCL_TRY(ncclGetUniqueId(&uid), nullptr, "dist::nccl_transport::new_unique_id");
  nccl_unique_id id{};
  std::memcpy(id.bytes, &uid, sizeof(uid));
  return id;
}

#if VOXSTREAM_HAS_MPI
namespace {
void mpi_try(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  std::string what = std::string(call) + " failed";
  if (MPI_Error_string(rc, text, &len) == MPI_SUCCESS) what += ": " + std::string(text, len);
  throw error(
      vox::detail::format_error("dist::nccl_transport::from_mpi", what, __FILE__, __LINE__));
}
}  // namespace

nccl_transport nccl_transport::from_mpi(MPI_Comm comm) {
  constexpr const char* op = "dist::nccl_transport::from_mpi";
  int rank = 0;
  int size = 0;
  mpi_try(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_try(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  mpi_try(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
  int local_rank = 0;
  int local_size = 0;
  const int rc_rank = MPI_Comm_rank(node, &local_rank);
  const int rc_size = MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  mpi_try(rc_rank, "MPI_Comm_rank");
  mpi_try(rc_size, "MPI_Comm_size");
  // Every process learns whether every node has a GPU per process, so that all throw or none.
  const int gpus = device_count();
  int fits = local_size <= gpus ? 1 : 0;
  mpi_try(MPI_Allreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  VOX_EXPECTS(fits == 1, op,
              local_size > gpus
                  ? "this node runs " + std::to_string(local_size) + " processes of the " +
                        "communicator but has " + std::to_string(gpus) +
                        " GPU(s): one process per GPU"
                  : std::string("another node runs more processes than it has GPUs: one "
                                "process per GPU"));
  nccl_unique_id id{};
  if (rank == 0) id = new_unique_id();
  mpi_try(MPI_Bcast(id.bytes, static_cast<int>(sizeof(id.bytes)), MPI_BYTE, 0, comm), "MPI_Bcast");
  return nccl_transport(id, rank, size, local_rank);
}
#endif

nccl_transport::~nccl_transport() = default;
nccl_transport::nccl_transport(nccl_transport&&) noexcept = default;
nccl_transport& nccl_transport::operator=(nccl_transport&&) noexcept = default;

nccl_transport::impl& nccl_transport::self(const char* op) const {
  VOX_EXPECTS(impl_ != nullptr, op, "the transport was moved from");
  return *impl_;
}

void nccl_transport::begin() {
  impl& m = self("dist::nccl_transport::begin");
  VOX_NCCL_TRY(ncclGroupStart(), nullptr, "dist::nccl_transport::begin");
  ++m.open_groups;
}

void nccl_transport::end() {
  constexpr const char* op = "dist::nccl_transport::end";
  impl& m = self(op);
  VOX_EXPECTS(m.open_groups > 0, op, "end() without begin()");
  --m.open_groups;
  VOX_NCCL_TRY(ncclGroupEnd(), nullptr, op);
}

void nccl_transport::check(const transfer& t) const {
  constexpr const char* op = "dist::nccl_transport";
  const impl& m = self(op);
  (void)m.local(t.from.device, op, "partition " + std::to_string(t.from.partition));
  (void)m.local(t.to.device, op, "partition " + std::to_string(t.to.partition));
}

void nccl_transport::post(const transfer& t) {
  constexpr const char* op = "dist::nccl_transport::post";
  impl& m = self(op);
  const std::size_t a = m.local(t.from.device, op, "partition " + std::to_string(t.from.partition));
  const std::size_t b = m.local(t.to.device, op, "partition " + std::to_string(t.to.partition));
  if (t.bytes == 0) return;
  const bool own_group = m.open_groups == 0;  // a send to self must meet its recv in a group
  if (own_group) begin();
  try {
    VOX_NCCL_TRY(ncclSend(t.src, t.bytes, ncclUint8, m.ranks[b], m.comms[a], t.from.stream.value()),
                 m.comms[a], op);
    VOX_NCCL_TRY(ncclRecv(t.dst, t.bytes, ncclUint8, m.ranks[a], m.comms[b], t.to.stream.value()),
                 m.comms[b], op);
  } catch (...) {
    m.abandon_groups();
    throw;
  }
  if (own_group) end();
}

std::vector<int> nccl_transport::devices() const {
  return self("dist::nccl_transport::devices").devices;
}

std::size_t nccl_transport::ranks() const noexcept {
  return impl_ ? static_cast<std::size_t>(impl_->size) : 0;
}

int nccl_transport::rank_of(int device) const {
  constexpr const char* op = "dist::nccl_transport::rank_of";
  const impl& m = self(op);
  return m.ranks[m.local(device, op, "the device")];
}

void nccl_transport::all_reduce(const std::vector<reduce_part>& parts, std::size_t count,
                                reduce_type type, reduce_op o) {
  constexpr const char* op = "dist::nccl_transport::all_reduce";
  impl& m = self(op);
  m.check_parts(parts, count, op);
  if (count == 0) return;
  begin();
  try {
    for (const reduce_part& p : parts) {
      const ncclComm_t c = m.comms[m.local(p.at.device, op, "a part")];
      VOX_NCCL_TRY(
          ncclAllReduce(p.send, p.recv, count, nccl_type(type), nccl_op(o), c, p.at.stream.value()),
          c, op);
    }
  } catch (...) {
    m.abandon_groups();
    throw;
  }
  end();
}

void nccl_transport::reduce(const std::vector<reduce_part>& parts, std::size_t root,
                            std::size_t count, reduce_type type, reduce_op o) {
  constexpr const char* op = "dist::nccl_transport::reduce";
  impl& m = self(op);
  VOX_EXPECTS(static_cast<std::size_t>(m.size) == m.devices.size(), op,
              "the communicator has " + std::to_string(m.size) + " ranks, " +
                  std::to_string(m.devices.size()) +
                  " of them here: a reduce needs every rank in this process (use all_reduce)");
  VOX_EXPECTS(root < parts.size(), op,
              "root part " + std::to_string(root) + " of " + std::to_string(parts.size()));
  m.check_parts(parts, count, op);
  if (count == 0) return;
  const int root_rank = m.ranks[m.local(parts[root].at.device, op, "the root part")];
  begin();
  try {
    for (const reduce_part& p : parts) {
      const ncclComm_t c = m.comms[m.local(p.at.device, op, "a part")];
      VOX_NCCL_TRY(ncclReduce(p.send, p.recv, count, nccl_type(type), nccl_op(o), root_rank, c,
                              p.at.stream.value()),
                   c, op);
    }
  } catch (...) {
    m.abandon_groups();
    throw;
  }
  end();
}

}  // namespace vox::dist

#endif  // VOXSTREAM_HAS_NCCL
