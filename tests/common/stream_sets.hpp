// The stream sets the op tests run on: numbers of streams, slice mappings and slab policies.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <voxstream/exec/stream_set.hpp>

namespace vox_test {

/// A stream set for filters and geometry ops.
struct stream_config {
  std::size_t streams;
  vox::slice_mapping mapping;
  bool every_stream;  // slab_policy::every_stream(): many slabs of small volumes (halo seams)
};

/// 1, 3 and 32 streams, both mappings, a slab per stream or the default slab policy.
inline const stream_config all_configs[] = {{1, vox::slice_mapping::contiguous, false},
                                            {3, vox::slice_mapping::contiguous, true},
                                            {32, vox::slice_mapping::contiguous, true},
                                            {3, vox::slice_mapping::round_robin, true},
                                            {32, vox::slice_mapping::round_robin, false}};

/// The set of `c`, with two staging buffers of 1 MiB.
inline vox::stream_set make_set(const stream_config& c) {
  vox::stream_set_options o;
  o.mapping = c.mapping;
  if (c.every_stream) o.policy = vox::slab_policy::every_stream();
  o.staging_buffers = 2;
  o.staging_bytes = 1u << 20;
  return vox::stream_set(c.streams, o);
}

inline std::string describe(const stream_config& c) {
  return std::to_string(c.streams) + " streams, " +
         (c.mapping == vox::slice_mapping::contiguous ? "contiguous" : "round_robin") +
         (c.every_stream ? ", a slab per stream" : ", default slab policy");
}

/// A stream set for reductions after a per-slab producer.
struct stream_case {
  std::size_t streams;
  vox::slice_mapping mapping;
  bool per_slab;
};

/// The slab policy that makes whole-volume reductions per slab (true: a slab on every stream)
/// or one launch (false: no volume of these tests pays for a second slab).
inline vox::slab_policy slab_mode(bool per_slab) {
  return per_slab ? vox::slab_policy::every_stream() : vox::slab_policy{};
}

/// Every set of `sets` (streams, mapping), first reducing as one launch, then per slab.
inline std::vector<stream_case> stream_cases(const std::vector<stream_case>& sets) {
  std::vector<stream_case> v;
  for (bool per_slab : {false, true})
    for (const stream_case& c : sets) v.push_back({c.streams, c.mapping, per_slab});
  return v;
}

/// The test name of a stream_case, e.g. "3_round_robin_per_slab".
inline std::string case_name(const stream_case& c) {
  return std::to_string(c.streams) +
         (c.mapping == vox::slice_mapping::contiguous ? "_contiguous" : "_round_robin") +
         (c.per_slab ? "_per_slab" : "_whole");
}

}  // namespace vox_test
