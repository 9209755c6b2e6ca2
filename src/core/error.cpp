#include <voxstream/core/error.hpp>

#include <cstdio>
#include <string>

#include "../detail/cuda_check.hpp"

namespace vox::detail {

std::string format_error(const char* op, const std::string& what, const char* file, int line) {
  std::string s = "voxstream: ";
  s += op;
  s += ": ";
  s += what;
  s += " (";
  s += file;
  s += ':';
  s += std::to_string(line);
  s += ')';
  return s;
}

void throw_invalid(const char* op, const std::string& what, const char* file, int line) {
  throw invalid_argument(format_error(op, what, file, line));
}

void throw_out_of_memory(const char* op, const std::string& what, const char* file, int line) {
  throw out_of_memory(format_error(op, what, file, line));
}

void log_error(const char* op, const std::string& what) noexcept {
  std::fprintf(stderr, "voxstream: %s: %s (ignored in a destructor)\n", op, what.c_str());
}

#if VOX_BACKEND_CUDA
void throw_cuda(cudaError_t e, const char* op, const char* call, const char* file, int line) {
  std::string what = std::string(call) + " failed: " + cudaGetErrorName(e) + " (" +
                     cudaGetErrorString(e) + ")";
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // allocation failures are not sticky: clear and stay usable
    throw out_of_memory(format_error(op, what, file, line));
  }
  throw cuda_error(format_error(op, what, file, line), static_cast<int>(e));
}
#endif

}  // namespace vox::detail
