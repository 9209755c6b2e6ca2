# Backend helpers shared by the build tree and the installed package.
#   VOXSTREAM_BACKEND         cuda | host
#   voxstream_cuda_sources(<files>)   .cu files: CUDA on the cuda backend, C++ (g++) on host
#   voxstream_backend_usage(<target>) usage requirements of the backend (voxstream_core only; the
#                                     other components get them through core; CUPTI is profile's)
#   voxstream_warnings(<target>)      warnings (as errors when VOXSTREAM_WARNINGS_AS_ERRORS)

function(voxstream_cuda_sources)
  if(VOXSTREAM_BACKEND STREQUAL "host")
    foreach(f IN LISTS ARGN)
      get_filename_component(ext "${f}" LAST_EXT)
      if(ext STREQUAL ".cu")
        set_source_files_properties(${f} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-xc++")
      endif()
    endforeach()
  endif()
endfunction()

function(voxstream_find_cccl out)
  find_path(_vox_cccl thrust/version.h
    HINTS $ENV{CUDA_PATH}/include/cccl $ENV{CUDA_HOME}/include/cccl
          /usr/local/cuda/include/cccl /usr/local/cuda/include /usr/include/cccl
    NO_CACHE)
  if(NOT _vox_cccl)
    message(FATAL_ERROR "voxstream host backend: CCCL (thrust/version.h) not found; set CUDA_PATH")
  endif()
  set(${out} ${_vox_cccl} PARENT_SCOPE)
endfunction()

function(voxstream_backend_usage target)
  # Thrust/CUB headers, also for C++ translation units. CCCL is found again on the consumer's
  # machine (voxstreamConfig.cmake), so the path is not baked into the package.
  voxstream_find_cccl(cccl)
  target_include_directories(${target} SYSTEM PUBLIC $<BUILD_INTERFACE:${cccl}>)
  if(VOXSTREAM_BACKEND STREQUAL "cuda")
    target_link_libraries(${target} PUBLIC CUDA::cudart_static)
    target_compile_options(${target} PUBLIC
      $<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda --expt-relaxed-constexpr>)
  else()
    target_compile_definitions(${target} PUBLIC THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_OMP)
    target_link_libraries(${target} PUBLIC OpenMP::OpenMP_CXX)
  endif()
endfunction()

function(voxstream_warnings target)
  set(cxx_warn -Wall -Wextra -Wpedantic -Wshadow)
  set(cuda_warn -Xcompiler=-Wall,-Wextra)
  if(VOXSTREAM_WARNINGS_AS_ERRORS)
    list(APPEND cxx_warn -Werror)
    list(APPEND cuda_warn --Werror=all-warnings -Xcompiler=-Werror)
  endif()
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${cxx_warn}>
    $<$<COMPILE_LANGUAGE:CUDA>:${cuda_warn}>)
endfunction()
