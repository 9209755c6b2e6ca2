#include <voxstream/profile/timeline.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "detail/format.hpp"
#include "detail/lanes.hpp"

namespace vox::profile {

using detail::dims;
using detail::fmt;
using detail::in_start_order;
using detail::lane_key;
using detail::lane_label;
using detail::lane_of;
using detail::lanes_of;
using detail::us3;

namespace {

std::string json_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size() + 2);
  for (const unsigned char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o;
}

bool any_kernels(const std::vector<activity_record>& records) {
  return std::any_of(records.begin(), records.end(),
                     [](const activity_record& r) { return r.kind == activity_kind::kernel; });
}

}  // namespace

std::string chrome_trace_json(const std::vector<activity_record>& records) {
  const std::vector<lane_key> lanes = lanes_of(records, false);
  std::uint64_t t0 = 0;
  if (!records.empty()) {
    t0 = records.front().start_ns;
    for (const auto& r : records) t0 = std::min(t0, r.start_ns);
  }
  const bool host = !any_kernels(records) &&
                    std::any_of(records.begin(), records.end(), [](const activity_record& r) {
                      return r.kind == activity_kind::op;
                    });
  const bool syncs = std::any_of(records.begin(), records.end(), [](const activity_record& r) {
    return r.kind == activity_kind::synchronization;
  });
  // Calling threads of the api records, in order of first appearance: the threads of process 3.
  std::vector<std::uint64_t> threads;
  for (const auto& r : records)
    if (r.kind == activity_kind::api &&
        std::find(threads.begin(), threads.end(), r.stream) == threads.end())
      threads.push_back(r.stream);
  auto thread_of = [&](std::uint64_t t) {
    return static_cast<std::size_t>(std::find(threads.begin(), threads.end(), t) -
                                    threads.begin()) +
           1;
  };

  std::string o;
  o.reserve(256 + records.size() * 200);
  o += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) o += ",\n";
    first = false;
  };
  auto meta = [&](const char* what, int pid, std::size_t tid, const std::string& key,
                  const std::string& value, bool quoted) {
    sep();
    o += "{\"name\":\"";
    o += what;
    o += "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
         ",\"args\":{\"" + key + "\":" + (quoted ? "\"" + json_escape(value) + "\"" : value) + "}}";
  };
  meta("process_name", 1, 0, "name", host ? "voxstream ops (host)" : "device", true);
  meta("process_sort_index", 1, 0, "sort_index", "1", false);
  if (syncs) {
    meta("process_name", 2, 0, "name", "host synchronisation", true);
    meta("process_sort_index", 2, 0, "sort_index", "2", false);
  }
  if (!threads.empty()) {
    meta("process_name", 3, 0, "name", "host: CUDA runtime calls", true);
    meta("process_sort_index", 3, 0, "sort_index", "3", false);
    for (std::size_t i = 0; i < threads.size(); ++i)
      meta("thread_name", 3, i + 1, "name", "thread " + std::to_string(threads[i]), true);
  }
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const std::string label = lane_label(lanes[i].index, lanes[i].stream);
    for (int pid = 1; pid <= (syncs ? 2 : 1); ++pid) {
      meta("thread_name", pid, i + 1, "name", label, true);
      meta("thread_sort_index", pid, i + 1, "sort_index", std::to_string(i + 1), false);
    }
  }
  for (const activity_record* r : in_start_order(records)) {
    const bool sync = r->kind == activity_kind::synchronization;
    const bool call = r->kind == activity_kind::api;
    sep();
    o += "{\"name\":\"" +
         json_escape(r->kind == activity_kind::kernel ? display_name(r->name) : r->name) +
         "\",\"cat\":\"" + activity_kind_name(r->kind) +
         "\",\"ph\":\"X\",\"ts\":" + us3(r->start_ns - t0) + ",\"dur\":" + us3(r->duration_ns()) +
         ",\"pid\":" + (call ? "3" : sync ? "2" : "1") + ",\"tid\":" +
         std::to_string(call ? thread_of(r->stream) : lane_of(lanes, r->stream) + 1) +
         ",\"args\":{";
    o += (call ? "\"thread\":" : "\"stream\":") + std::to_string(r->stream);
    if (r->stream_index >= 0) o += ",\"stream_index\":" + std::to_string(r->stream_index);
    switch (r->kind) {
      case activity_kind::kernel:
        o += ",\"kernel\":\"" + json_escape(r->name) + "\",\"grid\":\"" + dims(r->grid) +
             "\",\"block\":\"" + dims(r->block) + "\"";
        break;
      case activity_kind::memcpy:
      case activity_kind::memset:
        o += ",\"bytes\":" + std::to_string(r->bytes);
        break;
      case activity_kind::synchronization:
        o += std::string(",\"blocks_host\":") + (r->blocks_host ? "true" : "false");
        break;
      case activity_kind::op:
      case activity_kind::api:
        break;
    }
    o += ",\"correlation\":" + std::to_string(r->correlation) + "}}";
  }
  const timeline_stats st = compute_stats(records);
  o += "\n],\"otherData\":{\"generator\":\"voxstream\",\"summary\":\"" + json_escape(st.summary()) +
       "\",\"kernels\":" + std::to_string(st.kernels) + ",\"span_us\":" + us3(st.span_ns) +
       ",\"concurrency\":" + fmt("%.4f", st.concurrency) +
       ",\"max_concurrent\":" + std::to_string(st.max_concurrent) +
       ",\"api_calls\":" + std::to_string(st.api_calls) + ",\"api_us\":" + us3(st.api_ns) + "}}\n";
  return o;
}

}  // namespace vox::profile
