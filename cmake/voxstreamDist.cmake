# Multi-GPU dependencies of voxstream's dist layer (issue 6). Both are optional.
#   NCCL (>= 2.7, CUDA backend only): vox::dist::nccl_transport (dist/nccl_transport.hpp).
#   MPI (CXX), with NCCL: nccl_transport::from_mpi and samples/dist_mpi.
#
#   voxstream_detect_dist()
#     Options VOXSTREAM_WITH_NCCL and VOXSTREAM_WITH_MPI (ON: use the dependency when it is
#     found). Sets VOXSTREAM_HAS_NCCL and VOXSTREAM_HAS_MPI (1/0; config.hpp and the package
#     config record them) and VOXSTREAM_NCCL_LIBRARY / VOXSTREAM_NCCL_INCLUDE_DIR in the caller's
#     scope, and prints what was found and where.
#   voxstream_find_nccl([LIBRARY_HINT <file>] [INCLUDE_HINT <dir>])
#     Looks for nccl.h and the library (libnccl.so, or libnccl.so.2 alone), both in the same
#     place, the first of: the cache variables NCCL_INCLUDE_DIR and NCCL_LIBRARY (both given:
#     no search; one given: the other next to it or in the system's directories), the hints, NCCL_ROOT (CMake or environment variable), the CUDA toolkit
#     (CUDAToolkit_*, CUDA_PATH, CUDA_HOME, /usr/local/cuda), the system's directories, and
#     python3's pip wheel nvidia-nccl-cu* (nvidia/nccl/{include,lib}, found by importing
#     nvidia.nccl; the wheel has libnccl.so.2 and no libnccl.so).
#     On success defines the imported target voxstream::nccl and sets VOXSTREAM_NCCL_FOUND,
#     VOXSTREAM_NCCL_VERSION, VOXSTREAM_NCCL_LIBRARY and VOXSTREAM_NCCL_INCLUDE_DIR in the
#     caller's scope. Used by the build and again by voxstreamConfig.cmake, on the consumer's
#     machine (the library is static: its users link NCCL too).
#   voxstream_dist_dependencies(<target>)
#     Links voxstream::nccl PRIVATE (no public header includes nccl.h) and MPI::MPI_CXX PUBLIC
#     (dist/nccl_transport.hpp includes mpi.h for from_mpi).

# The directory of python3's nvidia.nccl package, or "" (no python3, no wheel). nvidia.nccl may
# be a namespace package, whose __file__ is None: then its first __path__ entry.
function(_voxstream_nccl_wheel_dir out)
  set(${out} "" PARENT_SCOPE)
  find_program(_vox_python NAMES python3 python NO_CACHE)
  if(NOT _vox_python)
    return()
  endif()
  set(_vox_py "import os, nvidia.nccl as m\nf = getattr(m, '__file__', None)\nprint(os.path.dirname(f) if f else list(m.__path__)[0])")
  execute_process(COMMAND ${_vox_python} -c "${_vox_py}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE dir ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 30)
  if(rc EQUAL 0 AND IS_DIRECTORY "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  endif()
endfunction()

# Looks for nccl.h in `inc_dirs` and the library in `lib_dirs` only; sets <out_inc> and <out_lib>
# when both are there, "" otherwise.
function(_voxstream_nccl_pair out_inc out_lib inc_dirs lib_dirs)
  unset(_vox_inc)
  unset(_vox_lib)
  find_path(_vox_inc nccl.h PATHS ${inc_dirs} NO_DEFAULT_PATH NO_CACHE)
  find_library(_vox_lib NAMES nccl libnccl.so.2 PATHS ${lib_dirs} NO_DEFAULT_PATH NO_CACHE)
  if(_vox_inc AND _vox_lib)
    set(${out_inc} "${_vox_inc}" PARENT_SCOPE)
    set(${out_lib} "${_vox_lib}" PARENT_SCOPE)
  else()
    set(${out_inc} "" PARENT_SCOPE)
    set(${out_lib} "" PARENT_SCOPE)
  endif()
endfunction()

function(voxstream_find_nccl)
  cmake_parse_arguments(ARG "" "LIBRARY_HINT;INCLUDE_HINT" "" ${ARGN})
  set(VOXSTREAM_NCCL_FOUND FALSE PARENT_SCOPE)

  # The header and the library are taken from the same place (two NCCLs would not match): the
  # first place, in order, that has both.
  set(inc "")
  set(lib "")
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)  # given by the user, or found by an earlier run
    set(inc "${NCCL_INCLUDE_DIR}")
    set(lib "${NCCL_LIBRARY}")
  elseif(NCCL_LIBRARY)  # only the library given: its header next to it, or the system's
    get_filename_component(d "${NCCL_LIBRARY}" DIRECTORY)
    unset(_vox_inc)
    find_path(_vox_inc nccl.h HINTS "${d}/../include" "${d}/../../include" NO_CACHE)
    if(_vox_inc)
      set(inc "${_vox_inc}")
      set(lib "${NCCL_LIBRARY}")
    endif()
  elseif(NCCL_INCLUDE_DIR)  # only the header given: its library next to it, or the system's
    unset(_vox_lib)
    find_library(_vox_lib NAMES nccl libnccl.so.2
                 HINTS "${NCCL_INCLUDE_DIR}/../lib" "${NCCL_INCLUDE_DIR}/../lib64" NO_CACHE)
    if(_vox_lib)
      set(inc "${NCCL_INCLUDE_DIR}")
      set(lib "${_vox_lib}")
    endif()
  endif()
  if(NOT lib AND ARG_LIBRARY_HINT AND ARG_INCLUDE_HINT)
    get_filename_component(d "${ARG_LIBRARY_HINT}" DIRECTORY)
    _voxstream_nccl_pair(inc lib "${ARG_INCLUDE_HINT}" "${d}")
  endif()
  foreach(root "${NCCL_ROOT}" "$ENV{NCCL_ROOT}" "${CUDAToolkit_TARGET_DIR}" "$ENV{CUDA_PATH}"
               "$ENV{CUDA_HOME}" /usr/local/cuda)
    if(NOT lib AND root)
      _voxstream_nccl_pair(inc lib "${root}/include" "${root}/lib64;${root}/lib")
    endif()
  endforeach()
  if(NOT lib AND CUDAToolkit_INCLUDE_DIRS AND CUDAToolkit_LIBRARY_DIR)
    _voxstream_nccl_pair(inc lib "${CUDAToolkit_INCLUDE_DIRS}" "${CUDAToolkit_LIBRARY_DIR}")
  endif()
  if(NOT lib)  # the system's directories (a libnccl-dev package)
    unset(_vox_inc)
    unset(_vox_lib)
    find_path(_vox_inc nccl.h NO_CACHE)
    find_library(_vox_lib NAMES nccl libnccl.so.2 NO_CACHE)
    if(_vox_inc AND _vox_lib)
      set(inc "${_vox_inc}")
      set(lib "${_vox_lib}")
    endif()
  endif()
  if(NOT lib)  # python3's wheel: nvidia/nccl/include/nccl.h, nvidia/nccl/lib/libnccl.so.2
    _voxstream_nccl_wheel_dir(wheel)
    if(wheel)
      _voxstream_nccl_pair(inc lib "${wheel}/include" "${wheel}/lib")
    endif()
  endif()
  if(NOT inc OR NOT lib OR NOT EXISTS "${inc}/nccl.h")
    return()
  endif()
  string(REGEX REPLACE "(.)/+$" "\\1" inc "${inc}")
  # Cached, so that a later run and the user see (and may change) what was used.
  set(NCCL_INCLUDE_DIR "${inc}" CACHE PATH "Directory of nccl.h")
  set(NCCL_LIBRARY "${lib}" CACHE FILEPATH "The NCCL library")

  file(STRINGS "${inc}/nccl.h" defs REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  set(version "")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${part} +([0-9]+)" m "${defs}")
    if(NOT m)
      return()
    endif()
    string(APPEND version "${CMAKE_MATCH_1}.")
  endforeach()
  string(REGEX REPLACE "\\.$" "" version "${version}")
  set(VOXSTREAM_NCCL_VERSION "${version}" PARENT_SCOPE)
  if(version VERSION_LESS 2.7)
    message(STATUS "voxstream dist: NCCL ${version} in ${inc} is older than 2.7 (no send/recv): "
                   "not used")
    return()
  endif()

  if(NOT TARGET voxstream::nccl)
    add_library(voxstream::nccl UNKNOWN IMPORTED)
    set_target_properties(voxstream::nccl PROPERTIES
      IMPORTED_LOCATION "${lib}"
      INTERFACE_INCLUDE_DIRECTORIES "${inc}")
  endif()
  set(VOXSTREAM_NCCL_FOUND TRUE PARENT_SCOPE)
  set(VOXSTREAM_NCCL_LIBRARY "${lib}" PARENT_SCOPE)
  set(VOXSTREAM_NCCL_INCLUDE_DIR "${inc}" PARENT_SCOPE)
endfunction()

function(voxstream_detect_dist)
  option(VOXSTREAM_WITH_NCCL "Build the NCCL transport when NCCL (>= 2.7) is found (cuda backend)" ON)
  option(VOXSTREAM_WITH_MPI "Build the MPI bootstrap of the NCCL transport when MPI is found" ON)
  set(has_nccl 0)
  set(has_mpi 0)
  set(nccl_lib "")
  set(nccl_inc "")

  if(NOT VOXSTREAM_BACKEND STREQUAL "cuda")
    message(STATUS "voxstream dist: NCCL transport and MPI bootstrap skipped on the "
                   "${VOXSTREAM_BACKEND} backend (CUDA only)")
  elseif(NOT VOXSTREAM_WITH_NCCL)
    message(STATUS "voxstream dist: NCCL transport skipped (VOXSTREAM_WITH_NCCL=OFF)")
  else()
    voxstream_find_nccl()
    if(VOXSTREAM_NCCL_FOUND)
      set(has_nccl 1)
      set(nccl_lib "${VOXSTREAM_NCCL_LIBRARY}")
      set(nccl_inc "${VOXSTREAM_NCCL_INCLUDE_DIR}")
      message(STATUS "voxstream dist: NCCL ${VOXSTREAM_NCCL_VERSION} found: ${nccl_lib} "
                     "(headers in ${nccl_inc}): nccl_transport enabled")
    else()
      message(STATUS "voxstream dist: NCCL not found: nccl_transport is skipped (set NCCL_ROOT, "
                     "or NCCL_INCLUDE_DIR and NCCL_LIBRARY, or pip install nvidia-nccl-cu13)")
    endif()
  endif()

  if(has_nccl AND VOXSTREAM_WITH_MPI)
    find_package(MPI QUIET COMPONENTS CXX)
    if(MPI_CXX_FOUND)
      set(has_mpi 1)
      message(STATUS "voxstream dist: MPI ${MPI_CXX_VERSION} found (${MPI_CXX_INCLUDE_DIRS}; "
                     "mpiexec: ${MPIEXEC_EXECUTABLE}): nccl_transport::from_mpi and "
                     "samples/dist_mpi enabled")
    else()
      message(STATUS "voxstream dist: MPI not found: nccl_transport::from_mpi and "
                     "samples/dist_mpi are skipped (install libopenmpi-dev to enable them)")
    endif()
  elseif(has_nccl)
    message(STATUS "voxstream dist: MPI bootstrap skipped (VOXSTREAM_WITH_MPI=OFF)")
  endif()

  set(VOXSTREAM_HAS_NCCL ${has_nccl} PARENT_SCOPE)
  set(VOXSTREAM_HAS_MPI ${has_mpi} PARENT_SCOPE)
  set(VOXSTREAM_NCCL_LIBRARY "${nccl_lib}" PARENT_SCOPE)
  set(VOXSTREAM_NCCL_INCLUDE_DIR "${nccl_inc}" PARENT_SCOPE)
endfunction()

function(voxstream_dist_dependencies target)
  if(VOXSTREAM_HAS_NCCL)
    target_link_libraries(${target} PRIVATE voxstream::nccl)
  endif()
  if(VOXSTREAM_HAS_MPI)
    target_link_libraries(${target} PUBLIC MPI::MPI_CXX)
  endif()
endfunction()
