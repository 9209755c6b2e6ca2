#include "format.hpp"

#include <cstdio>

namespace vox::profile::detail {

std::string us3(std::uint64_t ns) {
  char frac[8];
  std::snprintf(frac, sizeof frac, "%03u", static_cast<unsigned>(ns % 1000));
  return std::to_string(ns / 1000) + "." + frac;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string dims(dim3u d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

}  // namespace vox::profile::detail
