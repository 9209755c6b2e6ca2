// Internal: the six voxel types of the library as one list, for explicit instantiations.
// VOX_FOR_EACH_VOXEL_TYPE(M) expands to M(std::uint8_t) M(std::uint16_t) M(std::int16_t)
// M(std::int32_t) M(float) M(double), in vox::dtype's order. Not installed.
#pragma once

#include <cstdint>

#define VOX_FOR_EACH_VOXEL_TYPE(M) \
  M(std::uint8_t)                  \
  M(std::uint16_t)                 \
  M(std::int16_t)                  \
  M(std::int32_t)                  \
  M(float)                         \
  M(double)
