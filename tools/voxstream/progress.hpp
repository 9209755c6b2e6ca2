/// @file progress.hpp
/// @brief Progress of long jobs (slabs done): a bar redrawn in place on a terminal, plain lines
///        (one per ~10%) otherwise. The formatting is pure and unit-tested.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace vox::cli {

/// @brief "9s", "1m05s", "2h03m"; "--" when unknown (negative or not finite).
[[nodiscard]] std::string format_duration(double seconds);
/// @brief "3.1 slabs/s" (2 decimals below 1, 1 below 100, none above); "-- slabs/s" when unknown.
[[nodiscard]] std::string format_rate(double per_second, const std::string& unit);

/// @brief The terminal bar: "[#####-----] 12/40 slabs  3.1 slabs/s  ETA 9s". `width` cells, a
///        cell filled per width-th of the work (rounded down). The rate is the mean since the
///        start; the ETA the remaining work at that rate ("ETA --" before the first unit is done;
///        "done in 12s" once done == total).
[[nodiscard]] std::string format_bar(std::size_t done, std::size_t total, double elapsed_s,
                                     const std::string& unit = "slabs", std::size_t width = 10);
/// @brief A plain line for logs: "run: 12/40 slabs (30%)  3.1 slabs/s  ETA 9s" (and
///        "run: 40/40 slabs (100%) in 12s  3.3 slabs/s" at the end).
[[nodiscard]] std::string format_plain(const std::string& label, std::size_t done,
                                       std::size_t total, double elapsed_s,
                                       const std::string& unit = "slabs");
/// @brief Whether a plain line is due at `done` when the last one was at `last`: when `done`
///        reaches the next multiple of 10% of `total` (or is the first or the last unit).
[[nodiscard]] bool plain_line_due(std::size_t last, std::size_t done, std::size_t total) noexcept;

/// @brief How progress is shown.
enum class progress_mode {
  automatic,  ///< the bar when `out` is a terminal, plain lines otherwise
  bar,
  plain,
  off,
};

/// @brief `mode`, except that automatic becomes off when `out` is not a terminal: for the
///        coarse progress of in-memory runs and of `phantom`, which logs need not show (streamed
///        runs keep plain lines in logs).
[[nodiscard]] progress_mode terminal_only(progress_mode mode, std::FILE* out = stderr);

/// @brief Shows the progress of one job on `out` (stderr by default). Not thread-safe.
class progress_reporter {
 public:
  progress_reporter(std::string label, std::string unit = "slabs",
                    progress_mode mode = progress_mode::automatic, std::FILE* out = stderr);
  ~progress_reporter();
  progress_reporter(const progress_reporter&) = delete;
  progress_reporter& operator=(const progress_reporter&) = delete;

  /// @brief `done` of `total` units are done.
  void update(std::size_t done, std::size_t total);
  /// @brief Ends the bar's line (idempotent; also done by the destructor).
  void finish();
  /// @brief The mode in use (automatic resolved).
  [[nodiscard]] progress_mode mode() const noexcept { return mode_; }

 private:
  std::string label_;
  std::string unit_;
  progress_mode mode_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  std::size_t last_done_{0};
  std::size_t last_len_{0};
  bool printed_{false};
  bool open_line_{false};
};

}  // namespace vox::cli
