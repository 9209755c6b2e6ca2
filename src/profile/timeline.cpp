#include <voxstream/profile/timeline.hpp>

#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>

#include "detail/recorder.hpp"

namespace vox::profile {

timeline::timeline() : impl_(detail::start_recorder(nullptr, {})) {}
timeline::timeline(const timeline_options& opts) : impl_(detail::start_recorder(nullptr, opts)) {}
timeline::timeline(const stream_set& streams, const timeline_options& opts)
    : impl_(detail::start_recorder(&streams, opts)) {}

timeline::~timeline() {
  try {
    stop();
  } catch (const std::exception& ex) {
    vox::detail::log_error("timeline::~timeline", ex.what());
  }
}

timeline::timeline(timeline&&) noexcept = default;
timeline& timeline::operator=(timeline&& o) noexcept {
  if (this != &o) {
    try {
      stop();
    } catch (const std::exception& ex) {
      vox::detail::log_error("timeline", ex.what());
    }
    impl_ = std::move(o.impl_);
  }
  return *this;
}

void timeline::stop() {
  if (impl_ != nullptr && impl_->recording) impl_->finish();
}

bool timeline::recording() const noexcept { return impl_ != nullptr && impl_->recording; }

const std::vector<activity_record>& timeline::records() {
  VOX_EXPECTS(impl_ != nullptr, "timeline", "this timeline was moved from");
  stop();
  return impl_->records;
}

timeline_stats timeline::stats() { return compute_stats(records()); }

void timeline::write_chrome_trace(const std::string& path) {
  write_file_atomic(path, chrome_trace_json(records()));
}

void timeline::write_svg(const std::string& path, const std::string& title) {
  svg_options o;
  o.title = title;
  write_file_atomic(path, timeline_svg(records(), o));
}

std::size_t timeline::dropped() const noexcept { return impl_ != nullptr ? impl_->dropped : 0; }

}  // namespace vox::profile
