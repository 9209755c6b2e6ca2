/// @file voxstream.hpp
/// @brief Everything public that compiles without nvcc. vox::for_each_voxel and
///        vox::launch_per_slice are in <voxstream/exec/launch.hpp>.
#pragma once

#include <voxstream/config.hpp>
#include <voxstream/core/error.hpp>
#include <voxstream/core/extent.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/occupancy.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/io/format.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/io/png.hpp>
#include <voxstream/io/stream_process.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/memory/device_buffer.hpp>
#include <voxstream/memory/memory_resource.hpp>
#include <voxstream/ops/border.hpp>
#include <voxstream/ops/distance.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/geometry.hpp>
#include <voxstream/ops/histogram.hpp>
#include <voxstream/ops/label.hpp>
#include <voxstream/ops/morphology.hpp>
#include <voxstream/ops/projection.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/ops/regions.hpp>
#include <voxstream/volume.hpp>
#include <voxstream/volume/access.hpp>
