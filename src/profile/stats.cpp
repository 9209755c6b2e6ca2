#include <voxstream/profile/timeline.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "detail/format.hpp"
#include "detail/lanes.hpp"

namespace vox::profile {

using detail::fmt;
using detail::lane_before;

namespace {

// "50 ns" below a microsecond, "241.3 us" below a millisecond, "1.234 ms" from there on.
std::string human_time(double ns) {
  if (ns < 1e3) return fmt("%.0f ns", ns);
  if (ns < 1e6) return fmt("%.1f us", ns / 1e3);
  return fmt("%.3f ms", ns / 1e6);
}

}  // namespace

std::string timeline_stats::summary() const {
  const char* unit = host_ops ? "op slabs" : "kernels";
  std::string s = std::to_string(kernels) + " " + unit + " on " + std::to_string(streams.size()) +
                  (streams.size() == 1 ? " stream" : " streams");
  if (kernels > 0) {
    s += ", span " + human_time(static_cast<double>(span_ns)) + ", concurrency " +
         fmt("%.2f", concurrency) + "x, at most " + std::to_string(max_concurrent) + " at once";
    s += ", " + std::to_string(gaps) + (gaps == 1 ? " gap" : " gaps");
    if (gaps > 0)
      s += " (largest " + human_time(static_cast<double>(max_gap_ns)) + ", mean " +
           human_time(mean_gap_ns) + ")";
    if (host_waits > 0) s += ", " + std::to_string(host_waits) + " host waits";
  }
  if (api_calls > 0)
    s += ", host API " + human_time(static_cast<double>(api_ns)) + " in " +
         std::to_string(api_calls) + (api_calls == 1 ? " call" : " calls");
  return s;
}

timeline_stats compute_stats(const std::vector<activity_record>& records) {
  timeline_stats st;
  std::vector<const activity_record*> work;
  bool kernels_seen = false;
  std::map<std::string, api_summary> api;
  for (const auto& r : records) {
    if (r.kind == activity_kind::api) {
      api_summary& a = api[r.name];
      a.name = r.name;
      ++a.calls;
      a.total_ns += r.duration_ns();
      ++st.api_calls;
      st.api_ns += r.duration_ns();
    }
    if (r.kind == activity_kind::memcpy || r.kind == activity_kind::memset) ++st.copies;
    if (r.kind == activity_kind::synchronization && r.blocks_host) ++st.host_waits;
    if (r.is_work() && r.end_ns >= r.start_ns) {
      work.push_back(&r);
      kernels_seen = kernels_seen || r.kind == activity_kind::kernel;
    }
  }
  for (auto& [name, a] : api) st.api.push_back(std::move(a));
  std::stable_sort(st.api.begin(), st.api.end(), [](const api_summary& a, const api_summary& b) {
    return a.total_ns > b.total_ns;
  });
  st.host_ops = !work.empty() && !kernels_seen;
  st.kernels = work.size();
  if (work.empty()) return st;

  std::uint64_t first = work.front()->start_ns;
  std::uint64_t last = work.front()->end_ns;
  for (const auto* r : work) {
    first = std::min(first, r->start_ns);
    last = std::max(last, r->end_ns);
    st.kernel_ns += r->duration_ns();
  }
  st.span_ns = last - first;
  st.concurrency =
      st.span_ns > 0 ? static_cast<double>(st.kernel_ns) / static_cast<double>(st.span_ns) : 0.0;

  // Sweep over half-open intervals [start, end): at equal times ends come before starts, so
  // intervals that only touch do not count as concurrent.
  std::vector<std::pair<std::uint64_t, int>> ev;
  ev.reserve(2 * work.size());
  for (const auto* r : work) {
    if (r->end_ns == r->start_ns) continue;
    ev.emplace_back(r->start_ns, +1);
    ev.emplace_back(r->end_ns, -1);
  }
  std::sort(ev.begin(), ev.end());
  long now = 0;
  for (const auto& e : ev) {
    now += e.second;
    st.max_concurrent = std::max(st.max_concurrent, static_cast<std::size_t>(std::max(now, 0L)));
  }

  // Per stream: busy time (union of intervals) and gaps between consecutive work records.
  std::map<std::uint64_t, std::vector<const activity_record*>> by_stream;
  for (const auto* r : work) by_stream[r->stream].push_back(r);
  std::uint64_t gap_sum = 0;
  for (auto& [stream, v] : by_stream) {
    std::stable_sort(v.begin(), v.end(), [](const activity_record* a, const activity_record* b) {
      return a->start_ns < b->start_ns;
    });
    stream_summary sum;
    sum.stream = stream;
    sum.kernels = v.size();
    std::uint64_t cur_start = v.front()->start_ns;
    std::uint64_t cur_end = v.front()->end_ns;
    for (const auto* r : v) sum.stream_index = std::max(sum.stream_index, r->stream_index);
    for (std::size_t i = 1; i < v.size(); ++i) {
      const auto* r = v[i];
      if (r->start_ns > cur_end) {
        const std::uint64_t gap = r->start_ns - cur_end;
        ++st.gaps;
        gap_sum += gap;
        st.max_gap_ns = std::max(st.max_gap_ns, gap);
        sum.busy_ns += cur_end - cur_start;
        cur_start = r->start_ns;
        cur_end = r->end_ns;
      } else {
        cur_end = std::max(cur_end, r->end_ns);
      }
    }
    sum.busy_ns += cur_end - cur_start;
    st.streams.push_back(sum);
  }
  st.mean_gap_ns = st.gaps > 0 ? static_cast<double>(gap_sum) / static_cast<double>(st.gaps) : 0;
  std::sort(st.streams.begin(), st.streams.end(),
            [](const stream_summary& a, const stream_summary& b) {
              return lane_before({a.stream_index, a.stream}, {b.stream_index, b.stream});
            });
  return st;
}

}  // namespace vox::profile
