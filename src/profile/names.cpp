#include <voxstream/profile/timeline.hpp>

#include <cstdlib>
#include <string>

#include <cxxabi.h>

namespace vox::profile {

const char* activity_kind_name(activity_kind k) noexcept {
  switch (k) {
    case activity_kind::kernel:
      return "kernel";
    case activity_kind::memcpy:
      return "memcpy";
    case activity_kind::memset:
      return "memset";
    case activity_kind::synchronization:
      return "synchronization";
    case activity_kind::op:
      return "op";
    case activity_kind::api:
      return "api";
  }
  return "unknown";
}

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || d == nullptr) {
    std::free(d);
    return name;
  }
  std::string s(d);
  std::free(d);
  return s;
}

std::string display_name(const std::string& name) {
  // Only a function signature (a name ending in a parameter list) is shortened.
  if (name.empty() || name.back() != ')') return name;
  std::string s = name;
  // Drop the parameter list: the parenthesised group that ends the name.
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') ++depth;
    if (s[i] == '(' && --depth == 0) {
      if (i > 0) s.erase(i);
      break;
    }
  }
  // Drop a return type: everything up to the last space outside <...> and (...).
  int angle = 0;
  int paren = 0;
  std::size_t cut = std::string::npos;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++angle;
    if (c == '>' && angle > 0) --angle;
    if (c == '(') ++paren;
    if (c == ')' && paren > 0) --paren;
    if (c == ' ' && angle == 0 && paren == 0) cut = i;
  }
  if (cut != std::string::npos && cut + 1 < s.size()) s.erase(0, cut + 1);
  return s;
}

}  // namespace vox::profile
