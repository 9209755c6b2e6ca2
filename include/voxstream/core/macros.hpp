/// @file macros.hpp
/// @brief Portability macros shared by the CUDA and host backends.
#pragma once

#include <voxstream/config.hpp>

#if defined(__CUDACC__)
/// @brief Marks a function callable from host and device code (empty on the host backend).
#define VOX_HD __host__ __device__
/// @brief Qualifier for user lambdas passed to vox::for_each_voxel: `[=] VOX_LAMBDA (...)`.
#define VOX_LAMBDA __host__ __device__
#else
#define VOX_HD
#define VOX_LAMBDA
#endif
