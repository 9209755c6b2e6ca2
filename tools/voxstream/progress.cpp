#include "progress.hpp"

#include <unistd.h>

#include <cmath>
#include <utility>

namespace vox::cli {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  const auto s = static_cast<unsigned long long>(std::llround(seconds));
  char buf[48];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llus", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%llum%02llus", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lluh%02llum", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

std::string format_rate(double per_second, const std::string& unit) {
  if (!std::isfinite(per_second) || per_second < 0) return "-- " + unit + "/s";
  char buf[48];
  const char* fmt = per_second < 1 ? "%.2f" : (per_second < 100 ? "%.1f" : "%.0f");
  std::snprintf(buf, sizeof buf, fmt, per_second);
  return std::string(buf) + " " + unit + "/s";
}

namespace {
double rate_of(std::size_t done, double elapsed_s) {
  if (done == 0 || !(elapsed_s > 0)) return -1;
  return static_cast<double>(done) / elapsed_s;
}
std::string eta_of(std::size_t done, std::size_t total, double elapsed_s) {
  const double r = rate_of(done, elapsed_s);
  if (r <= 0) return "ETA --";
  return "ETA " + format_duration(static_cast<double>(total - done) / r);
}
}  // namespace

std::string format_bar(std::size_t done, std::size_t total, double elapsed_s,
                       const std::string& unit, std::size_t width) {
  if (done > total) done = total;
  const std::size_t filled = total == 0 ? width : done * width / total;
  std::string s = "[";
  s.append(filled, '#');
  s.append(width - filled, '-');
  s += "] " + std::to_string(done) + "/" + std::to_string(total) + " " + unit + "  ";
  // Before any time has passed (a job of one unit), no rate can be given.
  const double r = rate_of(done, elapsed_s);
  s += format_rate(r, unit);
  if (done == total)
    s += "  done in " + format_duration(elapsed_s);
  else
    s += "  " + eta_of(done, total, elapsed_s);
  return s;
}

std::string format_plain(const std::string& label, std::size_t done, std::size_t total,
                         double elapsed_s, const std::string& unit) {
  if (done > total) done = total;
  const unsigned pct =
      total == 0 ? 100u : static_cast<unsigned>(static_cast<double>(done) * 100.0 /
                                                static_cast<double>(total));
  std::string s = label + ": " + std::to_string(done) + "/" + std::to_string(total) + " " + unit +
                  " (" + std::to_string(pct) + "%)";
  if (done == total)
    s += " in " + format_duration(elapsed_s) + "  " + format_rate(rate_of(done, elapsed_s), unit);
  else
    s += "  " + format_rate(rate_of(done, elapsed_s), unit) + "  " +
         eta_of(done, total, elapsed_s);
  return s;
}

bool plain_line_due(std::size_t last, std::size_t done, std::size_t total) noexcept {
  if (total == 0 || done == 0 || done <= last) return false;
  if (done >= total) return true;
  if (last == 0) return true;  // the first unit: show that the job runs
  // The 10% step that `last` reached, and the one `done` reached.
  return (done * 10 / total) > (last * 10 / total);
}

progress_mode terminal_only(progress_mode mode, std::FILE* out) {
  if (mode != progress_mode::automatic) return mode;
  return (out != nullptr && ::isatty(::fileno(out)) != 0) ? progress_mode::bar
                                                          : progress_mode::off;
}

progress_reporter::progress_reporter(std::string label, std::string unit, progress_mode mode,
                                     std::FILE* out)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      mode_(mode),
      out_(out),
      start_(std::chrono::steady_clock::now()) {
  if (mode_ == progress_mode::automatic)
    mode_ = (out_ != nullptr && ::isatty(::fileno(out_)) != 0) ? progress_mode::bar
                                                               : progress_mode::plain;
}

progress_reporter::~progress_reporter() { finish(); }

void progress_reporter::update(std::size_t done, std::size_t total) {
  if (mode_ == progress_mode::off || out_ == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (mode_ == progress_mode::plain) {
    if (!plain_line_due(last_done_, done, total)) return;
    last_done_ = done;
    std::fprintf(out_, "%s\n", format_plain(label_, done, total, elapsed, unit_).c_str());
    std::fflush(out_);
    return;
  }
  // The bar: redraw at most ~10 times a second, and always the last state.
  if (printed_ && done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  printed_ = true;
  std::string line = label_ + " " + format_bar(done, total, elapsed, unit_);
  const std::size_t len = line.size();
  if (len < last_len_) line.append(last_len_ - len, ' ');  // erase the previous, longer text
  last_len_ = len;
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
  open_line_ = true;
  if (done >= total) finish();
}

void progress_reporter::finish() {
  if (open_line_ && out_ != nullptr) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  open_line_ = false;
}

}  // namespace vox::cli
