// partition_plan: the pure slab-decomposition logic of dist/partitioned_volume.hpp.
#include <voxstream/dist/partitioned_volume.hpp>

#include <algorithm>
#include <string>

namespace vox::dist {

partition_plan::partition_plan(std::size_t nz, std::size_t partitions, std::size_t halo)
    : nz_(nz), halo_(halo) {
  constexpr const char* op = "dist::partition_plan";
  VOX_EXPECTS(nz > 0, op, "the volume has no slices");
  VOX_EXPECTS(partitions > 0, op, "the number of partitions must be at least 1");
  VOX_EXPECTS(partitions <= nz, op,
              std::to_string(partitions) + " partitions of a volume of " + std::to_string(nz) +
                  " slices: at most one partition per slice");
  const std::size_t base = nz / partitions;
  const std::size_t extra = nz % partitions;
  parts_.reserve(partitions);
  std::size_t z = 0;
  for (std::size_t p = 0; p < partitions; ++p) {
    const std::size_t depth = base + (p < extra ? 1 : 0);
    partition part;
    part.index = p;
    part.owned = {z, z + depth};
    part.held = {z >= halo ? z - halo : 0, std::min(nz, z + depth + halo)};
    parts_.push_back(part);
    z += depth;
  }
  if (partitions > 1 && halo > 0) {
    // A halo must come from one neighbour's owned slices: the smallest partition is the last.
    const partition& thin = parts_.back();
    VOX_EXPECTS(thin.owned.depth() >= halo, op,
                "partition " + std::to_string(thin.index) + " owns " +
                    std::to_string(thin.owned.depth()) + " slices, fewer than the halo width " +
                    std::to_string(halo) + " (" + std::to_string(nz) + " slices in " +
                    std::to_string(partitions) +
                    " partitions): use fewer partitions or a smaller halo");
  }
}

std::size_t partition_plan::owner_of(std::size_t z) const {
  VOX_EXPECTS(z < nz_, "dist::partition_plan::owner_of",
              "slice " + std::to_string(z) + " is outside the volume's " + std::to_string(nz_) +
                  " slices");
  const auto it = std::upper_bound(parts_.begin(), parts_.end(), z,
                                   [](std::size_t v, const partition& p) { return v < p.owned.z1; });
  return static_cast<std::size_t>(it - parts_.begin());
}

std::vector<halo_message> partition_plan::messages() const {
  std::vector<halo_message> out;
  for (const partition& p : parts_) {
    if (p.halo_lo() > 0) {
      const partition& n = parts_[p.index - 1];
      out.push_back({n.index, p.index, p.held.z0 - n.held.z0, 0, p.halo_lo()});
    }
  }
  for (const partition& p : parts_) {
    if (p.halo_hi() > 0) {
      const partition& n = parts_[p.index + 1];
      out.push_back({n.index, p.index, p.owned.z1 - n.held.z0, p.local_owned().z1, p.halo_hi()});
    }
  }
  return out;
}

bool partition_plan::operator==(const partition_plan& o) const noexcept {
  if (nz_ != o.nz_ || halo_ != o.halo_ || parts_.size() != o.parts_.size()) return false;
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    if (!(parts_[i].owned == o.parts_[i].owned) || !(parts_[i].held == o.parts_[i].held))
      return false;
  }
  return true;
}

}  // namespace vox::dist
