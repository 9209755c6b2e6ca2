# File-format dependencies of voxstream's io layer (issue 5, Formats).
#   voxstream_io_dependencies(<target>)
#     zlib and libpng: required (NRRD/MetaImage compression, PNG export).
#     libtiff: optional. When found, TIFF stacks are built and VOXSTREAM_HAVE_TIFF=1 is a PUBLIC
#     definition of <target>; when not, src/io/tiff.cpp compiles to nothing, VOXSTREAM_HAVE_TIFF=0,
#     and reading or writing a .tif throws vox::io::io_error saying that TIFF was not built.
#   Sets VOXSTREAM_HAVE_TIFF (1/0) in the caller's scope, for the package config.
# The libraries are PRIVATE (no public header includes zlib.h, png.h or tiffio.h); for the static
# library they still appear as $<LINK_ONLY:...> in the export, so voxstreamConfig.cmake must
# find_dependency() them too.

option(VOXSTREAM_WITH_TIFF "Build TIFF stack support when libtiff is found" ON)

function(voxstream_io_dependencies target)
  find_package(ZLIB REQUIRED)
  find_package(PNG REQUIRED)
  target_link_libraries(${target} PRIVATE ZLIB::ZLIB PNG::PNG)

  set(have_tiff 0)
  if(VOXSTREAM_WITH_TIFF)
    find_package(TIFF QUIET)
    if(TIFF_FOUND)
      set(have_tiff 1)
    endif()
  endif()
  if(have_tiff)
    target_link_libraries(${target} PRIVATE TIFF::TIFF)
    message(STATUS "voxstream io: TIFF stacks enabled (libtiff ${TIFF_VERSION_STRING})")
  elseif(VOXSTREAM_WITH_TIFF)
    message(STATUS "voxstream io: libtiff not found: TIFF stack support is skipped "
                   "(install libtiff-dev to enable it)")
  else()
    message(STATUS "voxstream io: TIFF stack support is skipped (VOXSTREAM_WITH_TIFF=OFF)")
  endif()
  target_compile_definitions(${target} PUBLIC VOXSTREAM_HAVE_TIFF=${have_tiff})
  set(VOXSTREAM_HAVE_TIFF ${have_tiff} PARENT_SCOPE)
endfunction()
