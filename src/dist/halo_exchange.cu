// The ledger-ordered halo exchange of a partitioned_volume through a transport
// (dist/partitioned_volume.hpp).
#include <voxstream/dist/partitioned_volume.hpp>

#include <vector>

#include "../detail/voxel_types.hpp"
#include "detail/copy_jobs.hpp"

namespace vox::dist {

template <class T>
void exchange_halos(partitioned_volume<T>& pv, transport& t) {
  const auto msgs = pv.plan().messages();
  std::vector<detail::copy_job<T>> jobs;
  jobs.reserve(msgs.size());
  for (const halo_message& m : msgs) {
    detail::copy_job<T> j;
    j.recv_set = &pv.streams(m.dst);
    j.recv_stream = j.recv_set->stream_for_slice(m.dst_z0, pv.part(m.dst).extent().z);
    if (t.two_sided()) {
      j.send_set = &pv.streams(m.src);
      j.send_stream = j.send_set->stream_for_slice(m.src_z0, pv.part(m.src).extent().z);
    } else {
      j.send_set = j.recv_set;
      j.send_stream = j.recv_stream;
    }
    j.src_part = m.src;
    j.dst_part = m.dst;
    j.src = &pv.part(m.src);
    j.src_z0 = m.src_z0;
    j.dst = &pv.part(m.dst);
    j.dst_z0 = m.dst_z0;
    j.slices = m.slices;
    jobs.push_back(j);
  }
  detail::run_jobs(jobs, t, "dist::exchange_halos");
}

template <class T>
void exchange_halos(partitioned_volume<T>& pv) {
  copy_transport t;
  exchange_halos(pv, t);
}

#define VOX_INSTANTIATE(T)                                                                    \
  template void exchange_halos<T>(partitioned_volume<T>&, transport&);                        \
  template void exchange_halos<T>(partitioned_volume<T>&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_INSTANTIATE)
#undef VOX_INSTANTIATE

}  // namespace vox::dist
