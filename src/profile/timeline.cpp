#include <voxstream/profile/timeline.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cxxabi.h>
#include <unistd.h>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>

#include "../detail/cuda_check.hpp"
#include "cupti_hub.hpp"

namespace vox::profile {

// ============================================================================ names and text

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

namespace {

std::string lane_label(std::int64_t index, std::uint64_t stream) {
  return index >= 0 ? "stream " + std::to_string(index) : "stream id " + std::to_string(stream);
}

// A lane: one stream, ordered by index in the set (streams outside it last, by id).
struct lane_key {
  std::int64_t index;
  std::uint64_t stream;
};
bool lane_before(const lane_key& a, const lane_key& b) {
  const bool ai = a.index >= 0;
  const bool bi = b.index >= 0;
  if (ai != bi) return ai;
  if (ai && a.index != b.index) return a.index < b.index;
  return a.stream < b.stream;
}

// Distinct streams of `records` (all of them, or only work and copies) in lane order.
std::vector<lane_key> lanes_of(const std::vector<activity_record>& records, bool device_only) {
  std::map<std::uint64_t, std::int64_t> seen;
  for (const auto& r : records) {
    if (r.kind == activity_kind::api) continue;  // threads, not streams
    if (device_only && r.kind == activity_kind::synchronization) continue;
    auto it = seen.find(r.stream);
    if (it == seen.end()) {
      seen.emplace(r.stream, r.stream_index);
    } else if (it->second < 0 && r.stream_index >= 0) {
      it->second = r.stream_index;
    }
  }
  std::vector<lane_key> lanes;
  for (const auto& [stream, index] : seen) lanes.push_back({index, stream});
  std::sort(lanes.begin(), lanes.end(), lane_before);
  return lanes;
}

std::size_t lane_of(const std::vector<lane_key>& lanes, std::uint64_t stream) {
  for (std::size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i].stream == stream) return i;
  return lanes.size();
}

// ns as microseconds with exactly three decimals ("12.345"): exact, no floating point.
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

// "50 ns" below a microsecond, "241.3 us" below a millisecond, "1.234 ms" from there on.
std::string human_time(double ns) {
  if (ns < 1e3) return fmt("%.0f ns", ns);
  if (ns < 1e6) return fmt("%.1f us", ns / 1e3);
  return fmt("%.3f ms", ns / 1e6);
}

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

std::string xml_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (const unsigned char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&apos;";
        break;
      default:
        if (c >= 0x20 || c == '\n' || c == '\t') o += static_cast<char>(c);  // XML 1.0 chars
    }
  }
  return o;
}

std::string dims(dim3u d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

std::vector<const activity_record*> in_start_order(const std::vector<activity_record>& records) {
  std::vector<const activity_record*> v;
  v.reserve(records.size());
  for (const auto& r : records) v.push_back(&r);
  std::stable_sort(v.begin(), v.end(), [](const activity_record* a, const activity_record* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns < b->end_ns;
  });
  return v;
}

bool any_kernels(const std::vector<activity_record>& records) {
  return std::any_of(records.begin(), records.end(),
                     [](const activity_record& r) { return r.kind == activity_kind::kernel; });
}

}  // namespace

// ============================================================================ statistics

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

// ============================================================================ Chrome trace

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

// ============================================================================ SVG

namespace {

constexpr const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                   "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                   "#9c755f", "#17becf", "#bcbd22", "#8c564b"};
constexpr std::size_t palette_size = sizeof(palette) / sizeof(palette[0]);
constexpr const char* other_colour = "#a0a0a0";

// A "nice" tick step (1, 2 or 5 times a power of ten) giving at most about 10 ticks.
std::uint64_t tick_step(std::uint64_t span) {
  if (span == 0) return 1;
  const double raw = static_cast<double>(span) / 10.0;
  double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return static_cast<std::uint64_t>(std::max(1.0, m * p));
  }
  return static_cast<std::uint64_t>(10 * p);
}

std::string tick_label(std::uint64_t t, bool ms) {
  const double v = ms ? static_cast<double>(t) / 1e6 : static_cast<double>(t) / 1e3;
  std::string s = fmt("%.6g", v);
  return s + (ms ? " ms" : " \xC2\xB5s");  // µ in UTF-8
}

std::string px(double v) { return fmt("%.2f", v); }

}  // namespace

std::string timeline_svg(const std::vector<activity_record>& records, const svg_options& opts) {
  std::vector<activity_record> drawn;
  for (const auto& r : records)
    if (r.kind != activity_kind::synchronization && r.kind != activity_kind::api &&
        r.end_ns >= r.start_ns)
      drawn.push_back(r);
  const std::vector<lane_key> lanes = lanes_of(drawn, true);
  const timeline_stats st = compute_stats(records);

  std::uint64_t t0 = 0;
  std::uint64_t t1 = 0;
  if (!drawn.empty()) {
    t0 = drawn.front().start_ns;
    t1 = drawn.front().end_ns;
    for (const auto& r : drawn) {
      t0 = std::min(t0, r.start_ns);
      t1 = std::max(t1, r.end_ns);
    }
  }
  const std::uint64_t span = std::max<std::uint64_t>(t1 - t0, 1);

  // Colours by display name, in order of first appearance.
  std::vector<std::string> names;
  std::vector<std::size_t> counts;
  const auto ordered = in_start_order(drawn);
  auto short_name = [](const activity_record& r) {
    return r.kind == activity_kind::kernel ? display_name(r.name) : r.name;
  };
  for (const activity_record* r : ordered) {
    const std::string n = short_name(*r);
    auto it = std::find(names.begin(), names.end(), n);
    if (it == names.end()) {
      names.push_back(n);
      counts.push_back(1);
    } else {
      ++counts[static_cast<std::size_t>(it - names.begin())];
    }
  }
  auto colour_of = [&](const std::string& n) -> const char* {
    const auto i =
        static_cast<std::size_t>(std::find(names.begin(), names.end(), n) - names.begin());
    return i < palette_size ? palette[i] : other_colour;
  };

  const double width = std::max(opts.width, 400);
  const double left = 110;
  const double right = 20;
  const double plot_w = width - left - right;
  const double lane_h = 14;
  const double lane_gap = 4;
  const double top = 78;  // title, statistics, axis labels
  const double lanes_h = static_cast<double>(lanes.size()) * (lane_h + lane_gap);
  const std::size_t legend_rows =
      std::min(names.size(), palette_size) + (names.size() > palette_size ? 1 : 0);
  const double legend_top = top + lanes_h + 16;
  const double height = legend_top + static_cast<double>(legend_rows) * 16 + 12;
  auto x_of = [&](std::uint64_t t) {
    return left + plot_w * static_cast<double>(t - t0) / static_cast<double>(span);
  };

  std::string o;
  o.reserve(1024 + drawn.size() * 220);
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(width) + "\" height=\"" +
       px(height) + "\" viewBox=\"0 0 " + px(width) + " " + px(height) +
       "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o += "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"" + px(width) + "\" height=\"" + px(height) +
       "\" fill=\"#ffffff\"/>\n";
  o += "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">" + xml_escape(opts.title) +
       "</text>\n";
  o += "<text x=\"10\" y=\"38\">" + xml_escape(st.summary()) + "</text>\n";

  // Time axis: ticks and labels above the lanes, grid lines through them.
  const bool ms = span >= 2000000;
  const std::uint64_t step = tick_step(span);
  const double axis_y = top - 8;
  o += "<line class=\"axis\" x1=\"" + px(left) + "\" y1=\"" + px(axis_y) + "\" x2=\"" +
       px(left + plot_w) + "\" y2=\"" + px(axis_y) + "\" stroke=\"#333333\"/>\n";
  for (std::uint64_t t = 0; t <= span; t += step) {
    const double x = x_of(t0 + t);
    o += "<line class=\"tick\" x1=\"" + px(x) + "\" y1=\"" + px(axis_y - 4) + "\" x2=\"" + px(x) +
         "\" y2=\"" + px(top + lanes_h) + "\" stroke=\"#dddddd\"/>\n";
    o += "<text x=\"" + px(x) + "\" y=\"" + px(axis_y - 7) + "\" text-anchor=\"middle\">" +
         xml_escape(tick_label(t, ms)) + "</text>\n";
  }

  // Lanes.
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const double y = top + static_cast<double>(i) * (lane_h + lane_gap);
    o += "<rect class=\"lane\" x=\"" + px(left) + "\" y=\"" + px(y) + "\" width=\"" + px(plot_w) +
         "\" height=\"" + px(lane_h) + "\" fill=\"#f3f3f3\"/>\n";
    o += "<text x=\"" + px(left - 6) + "\" y=\"" + px(y + lane_h - 3) + "\" text-anchor=\"end\">" +
         xml_escape(lane_label(lanes[i].index, lanes[i].stream)) + "</text>\n";
  }

  // Bars, at least half a pixel wide so that short kernels stay visible.
  for (const activity_record* r : ordered) {
    const std::size_t lane = lane_of(lanes, r->stream);
    const double y = top + static_cast<double>(lane) * (lane_h + lane_gap);
    const double x0 = x_of(r->start_ns);
    const double w = std::max(x_of(r->end_ns) - x0, 0.5);
    const std::string n = short_name(*r);
    std::string tip = n + ": " + us3(r->start_ns - t0) + " us + " + us3(r->duration_ns()) + " us";
    if (r->kind == activity_kind::kernel)
      tip += ", grid " + dims(r->grid) + ", block " + dims(r->block);
    if (r->bytes > 0) tip += ", " + std::to_string(r->bytes) + " bytes";
    o += std::string("<rect class=\"") + (r->is_work() ? "k" : "c") + "\" x=\"" + px(x0) +
         "\" y=\"" + px(y + 1) + "\" width=\"" + px(w) + "\" height=\"" + px(lane_h - 2) +
         "\" fill=\"" + colour_of(n) + "\"><title>" + xml_escape(tip) + "</title></rect>\n";
  }

  // Legend.
  for (std::size_t i = 0; i < legend_rows; ++i) {
    const double y = legend_top + static_cast<double>(i) * 16;
    const bool other = i >= palette_size;
    std::string label;
    if (other) {
      std::size_t n = 0;
      for (std::size_t j = palette_size; j < names.size(); ++j) n += counts[j];
      label =
          "other (" + std::to_string(names.size() - palette_size) + " names) x" + std::to_string(n);
    } else {
      label = names[i];
      if (label.size() > 90) label = label.substr(0, 87) + "...";
      label += " x" + std::to_string(counts[i]);
    }
    o += "<rect class=\"sw\" x=\"" + px(left) + "\" y=\"" + px(y) +
         "\" width=\"12\" height=\"12\" fill=\"" + (other ? other_colour : palette[i]) + "\"/>\n";
    o += "<text x=\"" + px(left + 18) + "\" y=\"" + px(y + 10) + "\">" + xml_escape(label) +
         "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

// ============================================================================ atomic write

void write_file_atomic(const std::string& path, const std::string& contents) {
  const char* op = "write_file_atomic";
  VOX_EXPECTS(!path.empty(), op, "the path is empty");
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long>(::getpid())) + "." +
                          std::to_string(counter.fetch_add(1));
  auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw vox::error(
        vox::detail::format_error(op, what + " '" + path + "': " + why, __FILE__, __LINE__));
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) fail("cannot create a temporary file for");
  const bool written = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size() &&
                       std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int saved = errno;
  if (std::fclose(f) != 0 || !written) {
    errno = written ? errno : saved;
    fail("cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename the temporary file to");
}

// ============================================================================ recording

namespace {

// The one timeline that records (CUPTI activity tracing and the op hook are process-wide).
std::mutex& active_mutex() {
  static auto* m = new std::mutex;  // never destroyed: CUPTI may call back during exit
  return *m;
}

}  // namespace

struct timeline::impl {
  bool recording{false};
  std::vector<activity_record> records;
  std::size_t dropped{0};
  const stream_set* labels{nullptr};
  virtual ~impl() = default;
  virtual void finish() = 0;  // stops recording and fills `records`
};

#if VOX_BACKEND_CUDA
// ---------------------------------------------------------------------------- CUDA: CUPTI

namespace {

constexpr CUpti_ActivityKind recorded_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};

// Records delivered by CUPTI's buffer callbacks, for the active timeline.
struct cupti_sink {
  std::mutex mutex;
  std::vector<activity_record> records;
  std::unordered_map<const char*, std::string> kernel_names;  // CUPTI shares name pointers
  std::unordered_map<std::uint32_t, std::string> call_names;   // runtime calls, by callback id
  std::unordered_map<std::uint32_t, std::int64_t> stream_index;
  CUptiResult parse_error{CUPTI_SUCCESS};
};

cupti_sink* active_sink = nullptr;  // guarded by active_mutex()
bool buffers_registered = false;    // guarded by active_mutex()

std::int64_t index_of(const cupti_sink& s, std::uint32_t stream) {
  auto it = s.stream_index.find(stream);
  return it == s.stream_index.end() ? -1 : it->second;
}

const char* memcpy_kind_name(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "memcpy array";
    default:
      return "memcpy";
  }
}

// "cudaLaunchKernel" for CUPTI's "cudaLaunchKernel_v7000": the call as the user wrote it.
std::string runtime_call_name(CUpti_CallbackId cbid) {
  const char* n = nullptr;
  if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &n) != CUPTI_SUCCESS || n == nullptr)
    return "runtime call " + std::to_string(cbid);
  std::string s(n);
  const std::size_t v = s.rfind("_v");
  if (v != std::string::npos && v + 2 < s.size() &&
      std::all_of(s.begin() + static_cast<std::ptrdiff_t>(v) + 2, s.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    s.erase(v);
  return s;
}

void parse_record(cupti_sink& s, const CUpti_Activity* a) {
  activity_record r;
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
      r.kind = activity_kind::kernel;
      r.start_ns = k->start;
      r.end_ns = k->end;
      r.stream = k->streamId;
      r.stream_index = index_of(s, k->streamId);
      auto it = s.kernel_names.find(k->name);
      if (it == s.kernel_names.end()) it = s.kernel_names.emplace(k->name, demangle(k->name)).first;
      r.name = it->second;
      r.grid = dim3u{static_cast<std::uint32_t>(k->gridX), static_cast<std::uint32_t>(k->gridY),
                     static_cast<std::uint32_t>(k->gridZ)};
      r.block = dim3u{static_cast<std::uint32_t>(k->blockX), static_cast<std::uint32_t>(k->blockY),
                      static_cast<std::uint32_t>(k->blockZ)};
      r.correlation = k->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
      r.kind = activity_kind::memcpy;
      r.start_ns = m->start;
      r.end_ns = m->end;
      r.stream = m->streamId;
      r.stream_index = index_of(s, m->streamId);
      r.name = memcpy_kind_name(m->copyKind);
      r.correlation = m->correlationId;
      r.bytes = m->bytes;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
      r.kind = activity_kind::memset;
      r.start_ns = m->start;
      r.end_ns = m->end;
      r.stream = m->streamId;
      r.stream_index = index_of(s, m->streamId);
      r.name = "memset";
      r.correlation = m->correlationId;
      r.bytes = m->bytes;
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* y = reinterpret_cast<const CUpti_ActivitySynchronization2*>(a);
      r.kind = activity_kind::synchronization;
      r.start_ns = y->start;
      r.end_ns = y->end;
      if (y->streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE) {
        r.stream = y->streamId;
        r.stream_index = index_of(s, y->streamId);
      }
      r.correlation = y->correlationId;
      switch (y->type) {
        case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
          r.name = "cudaEventSynchronize";
          r.blocks_host = true;
          break;
        case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
          r.name = "cudaStreamWaitEvent";
          break;
        case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
          r.name = "cudaStreamSynchronize";  // VOX_ALLOW_SYNC: a record's name, not a call
          r.blocks_host = true;
          break;
        case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
          r.name = "cudaDeviceSynchronize";  // VOX_ALLOW_SYNC: a record's name, not a call
          r.blocks_host = true;
          break;
        default:
          r.name = "synchronization";
      }
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      const auto* c = reinterpret_cast<const CUpti_ActivityAPI*>(a);
      r.kind = activity_kind::api;
      r.start_ns = c->start;
      r.end_ns = c->end;
      r.stream = c->threadId;
      auto it = s.call_names.find(c->cbid);
      if (it == s.call_names.end())
        it = s.call_names.emplace(c->cbid, runtime_call_name(c->cbid)).first;
      r.name = it->second;
      r.correlation = c->correlationId;
      break;
    }
    default:
      return;
  }
  if (r.start_ns == 0 || r.end_ns < r.start_ns) return;  // no timing collected
  s.records.push_back(std::move(r));
}

// Activity buffers. CUPTI zeroes a buffer it is handed in the thread that produces the first
// record unless told that buffers come zeroed; zeroing (and first touching) 4 MiB stalled the
// first launch of a timeline by about 5 ms on an H200 VM. So buffers are zeroed and touched here,
// ahead of recording, and go back to the pool zeroed after their records were read.
constexpr std::size_t buffer_bytes = 4u << 20;
constexpr std::size_t pooled_buffers = 4;

struct buffer_pool {
  std::mutex mutex;
  std::vector<std::uint8_t*> free;
};
buffer_pool& buffers() {
  static auto* p = new buffer_pool;  // never destroyed: CUPTI may call back during exit
  return *p;
}

std::uint8_t* new_zeroed_buffer() {
  auto* b = static_cast<std::uint8_t*>(std::aligned_alloc(8, buffer_bytes));  // 8-byte aligned
  if (b != nullptr) std::memset(b, 0, buffer_bytes);
  return b;
}

void fill_buffer_pool() {
  buffer_pool& p = buffers();
  std::lock_guard<std::mutex> lock(p.mutex);
  while (p.free.size() < pooled_buffers) {
    std::uint8_t* b = new_zeroed_buffer();
    if (b == nullptr) break;
    p.free.push_back(b);
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  std::uint8_t* b = nullptr;
  {
    buffer_pool& p = buffers();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (!p.free.empty()) {
      b = p.free.back();
      p.free.pop_back();
    }
  }
  if (b == nullptr) b = new_zeroed_buffer();
  *buffer = b;
  *size = b != nullptr ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                               std::size_t valid) {
  if (buffer == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(active_mutex());
    if (active_sink != nullptr) {
      cupti_sink& s = *active_sink;
      std::lock_guard<std::mutex> sl(s.mutex);
      try {
        CUpti_Activity* a = nullptr;
        for (;;) {
          const CUptiResult r = cuptiActivityGetNextRecord(buffer, valid, &a);
          if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
          if (r != CUPTI_SUCCESS) {
            s.parse_error = r;
            break;
          }
          parse_record(s, a);
        }
      } catch (...) {
        s.parse_error = CUPTI_ERROR_UNKNOWN;
      }
    }
  }
  std::memset(buffer, 0, std::min(valid, buffer_bytes));
  buffer_pool& p = buffers();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.free.size() < pooled_buffers) {
    p.free.push_back(buffer);
  } else {
    std::free(buffer);
  }
}

// Makes CUPTI do its lazy per-session work (device timestamp buffers, the first activity
// buffer) before the timeline's start time: one memset on a private stream, waited for. Its
// records are dropped as they precede the start. Runs as the profile layer's own calls, which a
// sync_audit does not count.
void prime_cupti(const char* op) {
  static void* scratch = nullptr;              // guarded by active_mutex(); kept for the process
  static cudaStream_t prime_stream = nullptr;  // likewise
  const profile::detail::internal_calls quiet;
  if (scratch == nullptr) {
    VOX_CUDA_TRY(cudaStreamCreateWithFlags(&prime_stream, cudaStreamNonBlocking), op);
    VOX_CUDA_TRY(cudaMallocAsync(&scratch, 256, prime_stream), op);
  }
  VOX_CUDA_TRY(cudaMemsetAsync(scratch, 0, 256, prime_stream), op);
  // VOX_ALLOW_SYNC: the timeline's start waits for its own priming memset (profiling setup)
  VOX_CUDA_TRY(cudaStreamSynchronize(prime_stream), op);  // VOX_ALLOW_SYNC: see above
}

struct cupti_impl final : timeline::impl {
  std::unique_ptr<cupti_sink> sink = std::make_unique<cupti_sink>();
  std::vector<CUpti_ActivityKind> enabled;
  std::uint64_t start_ns{0};  // records before it (the priming) are dropped

  void start(const stream_set* set, const timeline_options& opts) {
    const char* op = "timeline";
    labels = set;
    std::lock_guard<std::mutex> lock(active_mutex());
    VOX_EXPECTS(active_sink == nullptr, op,
                "another timeline is already recording: CUPTI activity tracing is process-wide, "
                "so only one timeline can be open at a time");
    if (!buffers_registered) {
      VOX_CUPTI_TRY(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), op);
      std::uint8_t zeroed = 1;  // our buffers come zeroed: CUPTI need not zero them
      std::size_t zeroed_size = sizeof zeroed;
      VOX_CUPTI_TRY(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
                                              &zeroed_size, &zeroed),
                    op);
      buffers_registered = true;
    }
    fill_buffer_pool();
    if (set != nullptr) {
      for (std::size_t i = 0; i < set->size(); ++i) {
        std::uint32_t id = 0;
        VOX_CUPTI_TRY(cuptiGetStreamIdEx(nullptr, set->stream(i).value(), 0, &id), op);
        sink->stream_index[id] = static_cast<std::int64_t>(i);
      }
    }
    active_sink = sink.get();
    try {
      for (CUpti_ActivityKind k : recorded_kinds) {
        VOX_CUPTI_TRY(cuptiActivityEnable(k), op);
        enabled.push_back(k);
      }
      if (opts.api_calls) {
        VOX_CUPTI_TRY(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), op);
        enabled.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
      }
      prime_cupti(op);
      VOX_CUPTI_TRY(cuptiGetTimestamp(&start_ns), op);
    } catch (...) {
      for (CUpti_ActivityKind k : enabled) (void)cuptiActivityDisable(k);
      enabled.clear();
      active_sink = nullptr;
      throw;
    }
    recording = true;
  }

  void finish() override {
    const char* op = "timeline::stop";
    std::uint64_t stop_ns = 0;
    const CUptiResult ts = cuptiGetTimestamp(&stop_ns);
    cudaError_t synced = cudaSuccess;
    {
      // VOX_ALLOW_SYNC: the timeline's documented host wait; CUPTI's records of kernels are
      // complete only once the kernels have finished.
      const profile::detail::internal_calls quiet;
      synced = cudaDeviceSynchronize();  // VOX_ALLOW_SYNC: documented in timeline::stop()
    }
    CUptiResult first_error = ts;
    for (CUpti_ActivityKind k : enabled) {
      const CUptiResult r = cuptiActivityDisable(k);
      if (first_error == CUPTI_SUCCESS) first_error = r;
    }
    enabled.clear();
    const CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (first_error == CUPTI_SUCCESS) first_error = flushed;
    std::size_t lost = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &lost) == CUPTI_SUCCESS) dropped = lost;
    {
      std::lock_guard<std::mutex> lock(active_mutex());
      active_sink = nullptr;
    }
    recording = false;
    {
      std::lock_guard<std::mutex> sl(sink->mutex);
      records = std::move(sink->records);
      if (first_error == CUPTI_SUCCESS) first_error = sink->parse_error;
    }
    // The priming before the start, and the timeline's own device synchronisation at the end,
    // are not part of what it shows.
    records.erase(std::remove_if(records.begin(), records.end(),
                                 [&](const activity_record& r) {
                                   return r.start_ns < start_ns ||
                                          (ts == CUPTI_SUCCESS &&
                                           (r.kind == activity_kind::synchronization ||
                                            r.kind == activity_kind::api) &&
                                           r.start_ns >= stop_ns);
                                 }),
                  records.end());
    std::stable_sort(
        records.begin(), records.end(),
        [](const activity_record& a, const activity_record& b) { return a.start_ns < b.start_ns; });
    // VOX_ALLOW_SYNC: the call's name in the message.
    const char* sync_call = "cudaDeviceSynchronize()";  // VOX_ALLOW_SYNC: a name
    if (synced != cudaSuccess) vox::detail::throw_cuda(synced, op, sync_call, __FILE__, __LINE__);
    if (first_error != CUPTI_SUCCESS)
      profile::detail::throw_cupti(first_error, op, "CUPTI activity collection", __FILE__,
                                   __LINE__);
  }
};

}  // namespace

#else
// ---------------------------------------------------------------------------- host: op hook

namespace {

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
#endif

// ---------------------------------------------------------------------------- timeline

namespace {
std::unique_ptr<timeline::impl> start_timeline(const stream_set* set,
                                               const timeline_options& opts) {
#if VOX_BACKEND_CUDA
  auto p = std::make_unique<cupti_impl>();
  p->start(set, opts);
#else
  (void)opts;  // api_calls: the op records are host time already
  auto p = std::make_unique<host_impl>();
  p->start(set);
#endif
  return p;
}
}  // namespace

timeline::timeline() : impl_(start_timeline(nullptr, {})) {}
timeline::timeline(const timeline_options& opts) : impl_(start_timeline(nullptr, opts)) {}
timeline::timeline(const stream_set& streams, const timeline_options& opts)
    : impl_(start_timeline(&streams, opts)) {}

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
