#include "output_guard.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

namespace vox::cli {

namespace fs = std::filesystem;

namespace {

std::mutex& dirs_mutex() {
  static std::mutex m;
  return m;
}
std::set<fs::path>& watched_dirs() {
  static std::set<fs::path> d;
  return d;
}

fs::path dir_of(const fs::path& path) {
  const fs::path d = path.parent_path();
  return d.empty() ? fs::path(".") : d;
}

bool process_runs(long pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
  return errno == EPERM;  // runs, but is not ours to signal
}

std::string os_error(int err) { return std::strerror(err); }

}  // namespace

bool parse_temp_name(std::string_view file, temp_name& out) {
  // .<target>.tmp<pid>.<n>
  if (file.size() < 2 || file[0] != '.') return false;
  const std::size_t dot = file.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == file.size() || dot == 0) return false;
  for (const char c : file.substr(dot + 1))
    if (c < '0' || c > '9') return false;
  const std::size_t tmp = file.rfind(".tmp", dot - 1);
  if (tmp == std::string_view::npos || tmp <= 1) return false;
  const std::string_view digits = file.substr(tmp + 4, dot - tmp - 4);
  if (digits.empty() || digits.size() > 18) return false;
  long pid = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
    pid = pid * 10 + (c - '0');
  }
  out.target = std::string(file.substr(1, tmp - 1));
  out.pid = pid;
  return true;
}

bool temp_belongs_to(const std::string& target, const std::string& output_name) {
  if (target == output_name) return true;
  const std::string stem = fs::path(output_name).stem().string();
  return !stem.empty() && target.size() > stem.size() + 1 &&
         target.compare(0, stem.size() + 1, stem + ".") == 0;
}

void check_output_writable(const fs::path& path) {
  const std::string p = path.string();
  const fs::path dir = dir_of(path);
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st))
    throw output_error("cannot write '" + p + "': the directory '" + dir.string() +
                       "' does not exist (create it first)");
  if (!fs::is_directory(st))
    throw output_error("cannot write '" + p + "': '" + dir.string() + "' is not a directory");
  if (fs::is_directory(fs::status(path, ec)))
    throw output_error("cannot write '" + p + "': it is a directory");
  // Creating a file is the only test that also covers read-only file systems and root.
  const fs::path probe =
      dir / ("." + path.filename().string() + ".tmp" + std::to_string(::getpid()) + ".4294967295");
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err != EEXIST)
      throw output_error("cannot write '" + p + "': cannot create files in '" + dir.string() +
                         "': " + os_error(err));
    return;
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

std::size_t sweep_stale_temporaries(const fs::path& path) noexcept {
  std::size_t removed = 0;
  try {
    const std::string name = path.filename().string();
    std::error_code ec;
    for (fs::directory_iterator it(dir_of(path), ec), end; !ec && it != end; it.increment(ec)) {
      temp_name t;
      if (!parse_temp_name(it->path().filename().string(), t)) continue;
      if (!temp_belongs_to(t.target, name) || process_runs(t.pid)) continue;
      std::error_code rec;
      if (fs::remove(it->path(), rec)) ++removed;
    }
  } catch (...) {}
  return removed;
}

std::size_t remove_own_temporaries(const fs::path& dir) noexcept {
  std::size_t removed = 0;
  try {
    const long self = static_cast<long>(::getpid());
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      temp_name t;
      if (!parse_temp_name(it->path().filename().string(), t) || t.pid != self) continue;
      if (::unlink(it->path().c_str()) == 0) ++removed;
    }
  } catch (...) {}
  return removed;
}

void watch_output(const fs::path& path) {
  const std::lock_guard<std::mutex> lock(dirs_mutex());
  watched_dirs().insert(dir_of(path));
}

void install_signal_cleanup() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return;
  std::thread([set] {
    int sig = 0;
    if (::sigwait(&set, &sig) != 0) return;
    std::size_t removed = 0;
    {
      const std::lock_guard<std::mutex> lock(dirs_mutex());
      for (const fs::path& d : watched_dirs()) removed += remove_own_temporaries(d);
    }
    std::fprintf(stderr, "\nvoxstream: %s: stopped%s\n",
                 sig == SIGINT ? "interrupted" : "terminated",
                 removed > 0 ? "; removed the partial output" : "");
    std::fflush(stderr);
    // End the process by the same signal, so that the caller sees how it ended.
    ::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    ::raise(sig);
    ::_exit(128 + sig);
  }).detach();
}

}  // namespace vox::cli
