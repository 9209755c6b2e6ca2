// Internal to src/dist: ledger-ordered slice copies between partitions and whole volumes
// (copy_job, run_jobs through a transport), shared by scatter / gather, the halo exchange and the
// combines. Not installed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include <voxstream/core/stream.hpp>
#include <voxstream/dist/partitioned_volume.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>

namespace vox::dist::detail {

/// One ordered copy of `slices` slices: src [src_z0, ...) to dst [dst_z0, ...). The read of src
/// is ordered on (send_set, send_stream), the write of dst on (recv_set, recv_stream); both are
/// the same stream for a one-sided transport.
template <class T>
struct copy_job {
  stream_set* send_set{nullptr};
  std::size_t send_stream{0};
  std::size_t src_part{0};
  const volume<T>* src{nullptr};
  std::size_t src_z0{0};
  stream_set* recv_set{nullptr};
  std::size_t recv_stream{0};
  std::size_t dst_part{0};
  volume<T>* dst{nullptr};
  std::size_t dst_z0{0};
  std::size_t slices{0};
};

inline void no_work(stream_view, const slab&) {}

/// Declares the job's accesses to the ledgers with no work, each with its set's device current
/// (the ledger records events from the set's pool): run before the transfers, it makes the
/// streams wait (the destination's readers and writers, the source's writers); run again after
/// them, it records the marks that later ops order against (the first marks are then
/// superseded: a write replaces the writer, a read the reader on the same stream).
template <class T>
void declare(const copy_job<T>& j, const char* op) {
  {
    const device_scope on(j.recv_set->device());
    exec::run_op(*j.recv_set, op, {slab{j.recv_stream, j.dst_z0, j.dst_z0 + j.slices}},
                 {vox::write(*j.dst)}, no_work);
  }
  const device_scope on(j.send_set->device());
  exec::run_op(*j.send_set, op, {slab{j.send_stream, j.src_z0, j.src_z0 + j.slices}},
               {vox::read(*j.src)}, no_work);
}

/// Runs copy jobs through a transport: check every transfer, order before, post as one group,
/// record after. The transfers may be enqueued only at end() (NCCL groups), hence the marks
/// after it.
template <class T>
void run_jobs(const std::vector<copy_job<T>>& jobs, transport& t, const char* op) {
  if (jobs.empty()) return;
  std::vector<transfer> transfers;
  transfers.reserve(jobs.size());
  for (const auto& j : jobs) {
    const std::size_t sv = j.src->extent().slice_voxels();
    transfer tr;
    tr.from = endpoint{j.src_part, j.send_set->device(), j.send_set->stream(j.send_stream)};
    tr.to = endpoint{j.dst_part, j.recv_set->device(), j.recv_set->stream(j.recv_stream)};
    tr.src = j.src->data() + j.src_z0 * sv;
    tr.dst = j.dst->data() + j.dst_z0 * sv;
    tr.bytes = j.slices * sv * sizeof(T);
    t.check(tr);
    transfers.push_back(tr);
  }
  for (const auto& j : jobs) declare(j, op);
  t.begin();
  for (const auto& tr : transfers) t.post(tr);
  t.end();
  for (const auto& j : jobs) declare(j, op);
}

/// Copy jobs between a whole volume and partition p, split along p's slabs so that later
/// per-slab ops on the partition find their slices written on their own streams.
/// `local` is the range of the partition's local slices copied; `global_z0` the whole
/// volume's slice that local.z0 corresponds to.
template <class T>
void add_whole_jobs(std::vector<copy_job<T>>& jobs, stream_set& set, std::size_t p,
                    std::size_t part_depth, slice_range local, std::size_t global_z0,
                    const volume<T>* src, volume<T>* dst, bool to_part) {
  for (const slab& w : set.plan(part_depth)) {
    const std::size_t z0 = std::max(w.z0, local.z0);
    const std::size_t z1 = std::min(w.z1, local.z1);
    if (z0 >= z1) continue;
    copy_job<T> j;
    j.send_set = j.recv_set = &set;
    j.send_stream = j.recv_stream = w.stream;
    j.src_part = j.dst_part = p;
    j.src = src;
    j.dst = dst;
    j.slices = z1 - z0;
    const std::size_t global = global_z0 + (z0 - local.z0);
    j.src_z0 = to_part ? global : z0;
    j.dst_z0 = to_part ? z0 : global;
    jobs.push_back(j);
  }
}

}  // namespace vox::dist::detail
