/// @file voxstream.hpp
/// @brief Everything public that compiles without nvcc. vox::for_each_voxel and
///        vox::launch_per_slice are in <voxstream/exec/launch.hpp>.
#pragma once

#include <voxstream/config.hpp>
#include <voxstream/core/error.hpp>
#include <voxstream/core/extent.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/exec/access.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/occupancy.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/volume.hpp>
