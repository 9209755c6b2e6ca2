#include <voxstream/profile/timeline.hpp>

#include <algorithm>
#include <cmath>
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

}  // namespace vox::profile
