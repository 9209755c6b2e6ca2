# cmake -DREADME=README.md -DSOURCE=readme_tour.cu -P readme_snippet.cmake
# Fails unless README.md shows SOURCE verbatim as a ```cpp block between <!-- tour:begin -->
# and <!-- tour:end -->.
file(READ "${README}" readme)
file(READ "${SOURCE}" source)
set(block "<!-- tour:begin -->\n```cpp\n${source}```\n<!-- tour:end -->")
string(FIND "${readme}" "${block}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README} does not show ${SOURCE} verbatim between <!-- tour:begin --> "
                      "and <!-- tour:end --> (copy the file into the README's ```cpp block)")
endif()
message(STATUS "the README's API tour is ${SOURCE}")
