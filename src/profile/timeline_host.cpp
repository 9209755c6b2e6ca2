#include "detail/recorder.hpp"

#if !VOX_BACKEND_CUDA
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>

namespace vox::profile {

namespace {

// The one timeline that records (the op hook is process-wide).
std::mutex& active_mutex() {
  static auto* m = new std::mutex;  // never destroyed, as on the CUDA backend
  return *m;
}

bool host_active = false;  // guarded by active_mutex()

struct host_impl final : timeline::impl, exec::op_observer {
  struct open_slab {
    native_stream stream;
    slab w;
    std::uint64_t start;
  };
  std::vector<open_slab> open;
  std::mutex mutex;  // ops may run on several threads
  std::uint32_t seq{0};

  static std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }

  void start(const stream_set* set) {
    labels = set;
    std::lock_guard<std::mutex> lock(active_mutex());
    VOX_EXPECTS(!host_active, "timeline",
                "another timeline is already recording: only one timeline can be open at a time");
    exec::add_observer(this);
    host_active = true;
    recording = true;
  }

  void slab_begin(const char*, std::size_t, stream_view s, const slab& w) override {
    const std::uint64_t t = now_ns();
    try {
      std::lock_guard<std::mutex> lock(mutex);
      open.push_back({s.value(), w, t});
    } catch (...) {}
  }

  void slab_end(const char* op, std::size_t stream_index, stream_view s, const slab& w) override {
    const std::uint64_t end = now_ns();
    try {
      std::lock_guard<std::mutex> lock(mutex);
      for (std::size_t i = open.size(); i-- > 0;) {
        if (open[i].stream != s.value() || !(open[i].w == w)) continue;
        activity_record r;
        r.kind = activity_kind::op;
        r.start_ns = open[i].start;
        r.end_ns = end;
        // Lanes: the labelled set's streams by index and id; other streams by handle.
        r.stream = reinterpret_cast<std::uintptr_t>(s.value());
        r.stream_index = labels == nullptr ? static_cast<std::int64_t>(stream_index) : -1;
        if (labels != nullptr) {
          for (std::size_t k = 0; k < labels->size(); ++k) {
            if (labels->state(k)->handle != s.value()) continue;
            r.stream = labels->state(k)->id;
            r.stream_index = static_cast<std::int64_t>(k);
            break;
          }
        }
        r.name = op;
        r.correlation = ++seq;
        records.push_back(std::move(r));
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    } catch (...) {}
  }

  void finish() override {
    exec::remove_observer(this);
    {
      std::lock_guard<std::mutex> lock(active_mutex());
      host_active = false;
    }
    recording = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      open.clear();
    }
    std::stable_sort(
        records.begin(), records.end(),
        [](const activity_record& a, const activity_record& b) { return a.start_ns < b.start_ns; });
  }
};

}  // namespace

std::unique_ptr<timeline::impl> detail::start_recorder(const stream_set* set,
                                                       const timeline_options& opts) {
  (void)opts;  // api_calls: the op records are host time already
  auto p = std::make_unique<host_impl>();
  p->start(set);
  return p;
}

}  // namespace vox::profile
#endif
