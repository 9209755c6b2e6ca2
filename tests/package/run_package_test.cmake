# Run by the package_find_package test (cmake -P). Installs the voxstream build in
# VOX_BINARY_DIR into a fresh prefix, configures VOX_SAMPLES_DIR as a standalone project that
# finds it with find_package(voxstream), builds it, and runs its quickstart, which must print OK.
# Then the same for VOX_CORE_CONSUMER_DIR, which finds only the core component
# (find_package(voxstream COMPONENTS core), links voxstream::core): it must configure without
# the io, profile and dist dependencies, link neither zlib, libpng, libtiff, CUPTI nor NCCL, and
# its core_filter must print OK.
cmake_minimum_required(VERSION 3.25)

foreach(var VOX_BINARY_DIR VOX_SAMPLES_DIR VOX_CORE_CONSUMER_DIR VOX_WORK_DIR VOX_LIBDIR VOX_GENERATOR VOX_BACKEND)
  if("${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_package_test.cmake: ${var} is not set")
  endif()
endforeach()

set(prefix ${VOX_WORK_DIR}/prefix)
set(build ${VOX_WORK_DIR}/samples-build)
set(core_build ${VOX_WORK_DIR}/core-build)

# Runs a command, echoing it, and fails the test with its output if it fails.
function(vox_step what)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "package test: ${what}: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  set(step_output "${out}${err}" PARENT_SCOPE)
endfunction()

# 0. Fresh directories each time.
file(REMOVE_RECURSE ${VOX_WORK_DIR})
file(MAKE_DIRECTORY ${VOX_WORK_DIR})

# 1. Install the already-built voxstream.
set(config_args)
if(NOT "${VOX_CONFIG}" STREQUAL "")
  set(config_args --config ${VOX_CONFIG})
endif()
vox_step("install" ${CMAKE_COMMAND} --install ${VOX_BINARY_DIR} --prefix ${prefix} ${config_args})
set(package_dir ${prefix}/${VOX_LIBDIR}/cmake/voxstream)
if(NOT EXISTS ${package_dir}/voxstreamConfig.cmake)
  message(FATAL_ERROR "package test: no voxstreamConfig.cmake in ${package_dir}")
endif()

# 2. Configure the samples as an outside project: only voxstream_DIR points at voxstream.
set(configure_args -G ${VOX_GENERATOR}
    -Dvoxstream_DIR:PATH=${package_dir}
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
    -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
    -DCMAKE_CXX_COMPILER=${VOX_CXX_COMPILER}
    "-DCMAKE_CXX_FLAGS=${VOX_CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${VOX_EXE_LINKER_FLAGS}")
if(NOT "${VOX_GENERATOR_PLATFORM}" STREQUAL "")
  list(APPEND configure_args -A ${VOX_GENERATOR_PLATFORM})
endif()
if(NOT "${VOX_MAKE_PROGRAM}" STREQUAL "")
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${VOX_MAKE_PROGRAM})
endif()
if(NOT "${VOX_CONFIG}" STREQUAL "")
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${VOX_CONFIG})
endif()
if(NOT "${VOX_WARNINGS_AS_ERRORS}" STREQUAL "")
  list(APPEND configure_args -DVOXSTREAM_WARNINGS_AS_ERRORS=${VOX_WARNINGS_AS_ERRORS})
endif()
if(VOX_BACKEND STREQUAL "cuda")
  list(APPEND configure_args -DCMAKE_CUDA_COMPILER=${VOX_CUDA_COMPILER}
       "-DCMAKE_CUDA_FLAGS=${VOX_CUDA_FLAGS}")
  if(NOT "${VOX_CUDA_HOST_COMPILER}" STREQUAL "")
    list(APPEND configure_args -DCMAKE_CUDA_HOST_COMPILER=${VOX_CUDA_HOST_COMPILER})
  endif()
  if(NOT "${VOX_CUDA_ARCHITECTURES}" STREQUAL "")
    string(REPLACE "," ";" archs "${VOX_CUDA_ARCHITECTURES}")
    list(APPEND configure_args "-DCMAKE_CUDA_ARCHITECTURES=${archs}")
  endif()
endif()
vox_step("configure samples" ${CMAKE_COMMAND} -S ${VOX_SAMPLES_DIR} -B ${build} ${configure_args})

# The samples must use the installed package: its headers, not the source tree's.
file(READ ${build}/CMakeCache.txt cache)
string(FIND "${cache}" "voxstream_DIR:PATH=${package_dir}\n" found)
if(found EQUAL -1)
  message(FATAL_ERROR "package test: the samples did not find voxstream in ${package_dir}")
endif()
if(EXISTS ${build}/compile_commands.json)
  file(READ ${build}/compile_commands.json commands)
  get_filename_component(source_include ${VOX_SAMPLES_DIR}/../include ABSOLUTE)
  string(FIND "${commands}" "${prefix}/include" uses_prefix)
  string(FIND "${commands}" "${source_include}" uses_source)
  if(uses_prefix EQUAL -1 OR NOT uses_source EQUAL -1)
    message(FATAL_ERROR "package test: the samples do not compile against ${prefix}/include")
  endif()
endif()

# 3. Build them.
vox_step("build samples" ${CMAKE_COMMAND} --build ${build} ${config_args})

# Runs the executable <name> built in <dir>; it must print ": OK".
function(vox_run_ok dir name)
  set(exe)
  foreach(candidate ${dir}/${name} ${dir}/${VOX_CONFIG}/${name}
                    ${dir}/${name}.exe ${dir}/${VOX_CONFIG}/${name}.exe)
    if(EXISTS ${candidate} AND NOT IS_DIRECTORY ${candidate})
      set(exe ${candidate})
      break()
    endif()
  endforeach()
  if(NOT exe)
    message(FATAL_ERROR "package test: no ${name} executable under ${dir}")
  endif()
  vox_step("run ${name}" ${exe})
  message(STATUS "package test: ${name} said: ${step_output}")
  if(NOT step_output MATCHES ": OK")
    message(FATAL_ERROR "package test: ${name} did not print OK")
  endif()
endfunction()

# 4. Run quickstart; it must print OK.
vox_run_ok(${build} quickstart)

# 5. The core-only consumer: find_package(voxstream COMPONENTS core), voxstream::core. Its
# configure step fails if the package defined ZLIB::ZLIB, PNG::PNG, TIFF::TIFF, voxstream::nccl
# or MPI::MPI_CXX, or if voxstream::core's link closure names io, profile, dist or their
# libraries; it writes that closure to core_link_closure.txt.
vox_step("configure the core consumer" ${CMAKE_COMMAND} -S ${VOX_CORE_CONSUMER_DIR}
         -B ${core_build} ${configure_args})
if(NOT EXISTS ${core_build}/core_link_closure.txt)
  message(FATAL_ERROR "package test: the core consumer wrote no core_link_closure.txt")
endif()
file(READ ${core_build}/core_link_closure.txt closure)
message(STATUS "package test: voxstream::core links: ${closure}")
vox_step("build the core consumer" ${CMAKE_COMMAND} --build ${core_build} ${config_args})
# The link command itself (Makefiles: link.txt; Ninja: ninja -t commands).
set(link_line "")
file(GLOB_RECURSE link_txt ${core_build}/CMakeFiles/core_filter.dir/link.txt)
if(link_txt)
  list(GET link_txt 0 link_txt)
  file(READ ${link_txt} link_line)
elseif(EXISTS ${core_build}/build.ninja AND NOT "${VOX_MAKE_PROGRAM}" STREQUAL "")
  vox_step("core consumer's link command" ${VOX_MAKE_PROGRAM} -C ${core_build} -t commands
           core_filter)
  set(link_line "${step_output}")
  string(REGEX REPLACE ".*\n([^\n]+)\n*$" "\\1" link_line "${link_line}")
endif()
if(link_line STREQUAL "")
  message(STATUS "package test: the core consumer's link command was not found "
                 "(generator ${VOX_GENERATOR}): checked the link closure only")
else()
  message(STATUS "package test: core_filter's link command: ${link_line}")
  if(NOT link_line MATCHES "libvoxstream_core[.]")
    message(FATAL_ERROR "package test: core_filter does not link libvoxstream_core")
  endif()
  if(link_line MATCHES "(libvoxstream_(io|profile|dist)|libz[.]|-lz( |$)|libpng|-lpng|libtiff|-ltiff|cupti|nccl)")
    message(FATAL_ERROR "package test: core_filter links ${CMAKE_MATCH_1}")
  endif()
endif()
vox_run_ok(${core_build} core_filter)
message(STATUS "package test: PASS (find_package(voxstream) and find_package(voxstream "
               "COMPONENTS core) from ${package_dir}, backend ${VOX_BACKEND})")
