#include "cli.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

#if defined(VOXSTREAM_CLI11_SINGLE_HEADER) && VOXSTREAM_CLI11_SINGLE_HEADER
#include <CLI11.hpp>
#else
#include <CLI/CLI.hpp>
#endif

#include <voxstream/config.hpp>
#include <voxstream/core/backend.hpp>
#include <voxstream/core/error.hpp>
#include <voxstream/io/format.hpp>

#include "../../src/io/detail/text.hpp"
#include "ops_table.hpp"
#include "output_guard.hpp"

namespace vox::cli {

namespace {

constexpr const char* kVersion = "0.1.0";

const char* const kRunFooter = R"(
Ops run in the order given, each on the result of the previous one. Voxel types:
  gaussian, sobel, gradient-magnitude, rescale, normalize, mean-projection -> float32
    (float64 for float64 input); threshold -> uint8 mask (0/1); convert -> TYPE;
  uniform, median, erode, dilate, clamp, downsample, max/min-projection -> unchanged;
  label -> int32; edt -> float32 (float64 for float64); keep-largest -> uint8 mask;
  remove-small -> uint8 mask (int32 labels for int32 input);
  fill-holes, binary-erosion/dilation/opening/closing -> 0/1, unchanged type.
Filters use scipy.ndimage's defaults (mode 'reflect', Gaussian truncate 4).
A projection must be the last op; its result is 2D and may be written as .png.
Values in brackets may be left out: --label (6-connected), --label=26, --edt (the input's
spacing), --edt=1 (voxel units), --binary-erosion (the cross), --binary-opening=ball:2.

Memory: the volume is processed in device memory when the run fits --budget (default: 80% of
the free device memory on the cuda backend, 1G on the host backend); otherwise it is streamed
from the input file slab by slab (vox::stream_process), each slab carrying a halo of the
filters' summed z radii, so the result equals the in-memory one. A streamed run writes
.nrrd/.nhdr/.mha/.mhd/.raw volumes, or keeps only a projection/downsampling (then any format);
downsample must be the last op, and each normalize costs one more pass over the input.
label, fill-holes, keep-largest, remove-small and edt need the whole volume (their results are
global): a run with them is never streamed, and is refused with --stream or when it exceeds
--budget. Binary morphology streams with a halo of its element's z radius.

Examples:
  voxstream run ct.nrrd -o mask.nrrd --gaussian 2 --threshold 0.3:1
  voxstream run ct.nrrd -o mip.png --median 3 --max-projection z
  voxstream run big.raw --raw-extent 2048,2048,4096 --raw-type uint16 -o out.nrrd --gaussian 1
  voxstream run ct.nrrd -o labels.nrrd --threshold 0.3 --binary-opening=ball:1 --label=26)";

struct common_args {
  std::string budget;
  std::string streams{"8"};
  std::string progress{"auto"};
  bool quiet{false};
  CLI::Option* progress_opt{nullptr};
};

progress_mode to_mode(const std::string& s);

/// The progress mode: --progress if given, off with --quiet, else automatic.
progress_mode mode_of(const common_args& c) {
  if (c.quiet && c.progress_opt != nullptr && c.progress_opt->count() == 0)
    return progress_mode::off;
  return to_mode(c.progress);
}

struct raw_args {
  std::string extent;
  std::string type;
  std::string offset;
  bool big_endian{false};
};

struct state {
  common_args info_c, run_c, mip_c, stats_c, phantom_c;
  raw_args info_raw, run_raw, mip_raw, stats_raw;
  std::string info_in, run_in, mip_in, stats_in;
  std::string stats_values, stats_connectivity;
  std::string run_out, mip_out, phantom_out;
  bool header_only{false};
  bool run_stream{false}, run_in_memory{false}, mip_stream{false}, mip_in_memory{false};
  // Numbers are taken as text and parsed here, for messages a user can act on (CLI11's name
  // the type's limits, e.g. a 309-digit bound for a double).
  std::string run_slab_depth, mip_slab_depth;
  std::string mip_axis{"z"}, mip_mode{"max"}, mip_range, mip_slab;
  std::optional<std::string> mip_window, mip_level;
  std::string mip_bits{"8"};
  std::string ph_size{"128"}, ph_type{"float32"};
  std::optional<std::string> ph_scale;
  std::string ph_noise{"0"};
  std::string ph_seed{"1"};
  // run's op options, by option, for the command-line order.
  std::map<const CLI::Option*, std::string> op_options;
  CLI::App* info_cmd{nullptr};
  CLI::App* run_cmd{nullptr};
  CLI::App* mip_cmd{nullptr};
  CLI::App* stats_cmd{nullptr};
  CLI::App* phantom_cmd{nullptr};
};

void add_common(CLI::App* app, common_args& c, bool budget_help_streams) {
  app->add_option("--budget", c.budget,
                  budget_help_streams
                      ? "device memory to use, e.g. 512M or 2G (default: 80% of the free device "
                        "memory; 1G on the host backend); larger volumes are streamed"
                      : "device memory per slab, e.g. 512M or 2G (default as for run)")
      ->type_name("SIZE");
  app->add_option("--streams", c.streams, "CUDA streams of the stream set (1 to 1024)")
      ->type_name("N")
      ->capture_default_str();
  c.progress_opt = app->add_option("--progress", c.progress,
                  "progress on stderr: auto (a bar on a terminal; elsewhere plain lines for "
                  "streamed runs only), bar, plain or off")
      ->type_name("MODE")
      ->check(CLI::IsMember({"auto", "bar", "plain", "off"}))
      ->capture_default_str();
  app->add_flag("-q,--quiet", c.quiet,
                "print no summary on stdout and no progress (unless --progress is given)");
}

void add_raw(CLI::App* app, raw_args& r) {
  app->add_option("--raw-extent", r.extent,
                  "read the input as a headerless raw file of this extent (X,Y,Z)")
      ->type_name("X,Y,Z");
  app->add_option("--raw-type", r.type, "voxel type of a raw input (with --raw-extent)")
      ->type_name("TYPE");
  app->add_option("--raw-offset", r.offset, "bytes to skip at the start of a raw input")
      ->type_name("BYTES");
  app->add_flag("--big-endian", r.big_endian, "a raw input is big-endian");
}

progress_mode to_mode(const std::string& s) {
  if (s == "off") return progress_mode::off;
  if (s == "bar") return progress_mode::bar;
  if (s == "plain") return progress_mode::plain;
  if (s == "off") return progress_mode::off;
  return progress_mode::automatic;
}

std::size_t to_budget(const std::string& s) { return s.empty() ? 0 : parse_bytes(s); }

/// A whole number in [lo, hi], the whole of `text`; usage_error naming `what` otherwise.
std::uint64_t to_whole(const std::string& text, const std::string& what, std::uint64_t lo,
                       std::uint64_t hi) {
  const std::string_view t = io::detail::trim(text);
  const std::string range =
      hi == std::numeric_limits<std::uint64_t>::max()
          ? "a whole number >= " + std::to_string(lo)
          : "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  const auto all_digits = [](std::string_view d) {
    return !d.empty() &&
           std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const bool negative = t.size() > 1 && t[0] == '-' && all_digits(t.substr(1));
  if (!negative && !all_digits(t))
    throw usage_error(what + ": '" + text + "' is not a whole number (expected " + range + ")");
  std::uint64_t v = 0;
  if (negative || !io::detail::parse_u64(t, v) || v < lo || v > hi)
    throw usage_error(what + ": " + std::string(t) + " is out of range (expected " + range + ")");
  return v;
}

/// A finite number, the whole of `text`; usage_error naming `what` otherwise.
double to_real(const std::string& text, const std::string& what) {
  const std::string t(io::detail::trim(text));
  char* end = nullptr;
  errno = 0;
  const double v = t.empty() ? 0.0 : std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || std::isnan(v))
    throw usage_error(what + ": '" + text + "' is not a number");
  if (errno == ERANGE && std::isinf(v))
    throw usage_error(what + ": " + text + " is out of range (too large for a number here)");
  if (!std::isfinite(v)) throw usage_error(what + ": " + text + " is not a finite number");
  return v;
}

input_spec to_input(const std::string& path, const raw_args& r) {
  input_spec in;
  in.path = path;
  if (!r.extent.empty() || !r.type.empty()) {
    if (r.extent.empty() || r.type.empty())
      throw usage_error("a raw input needs both --raw-extent and --raw-type");
    io::raw_layout l;
    l.extent = parse_extent(r.extent, "--raw-extent");
    l.type = parse_dtype(r.type, "--raw-type");
    l.offset = r.offset.empty() ? 0 : to_whole(r.offset, "--raw-offset", 0,
                                                 std::numeric_limits<std::uint64_t>::max());
    l.order = r.big_endian ? io::byte_order::big : io::byte_order::little;
    in.raw = l;
  } else if (!r.offset.empty() || r.big_endian) {
    throw usage_error("--raw-offset and --big-endian need --raw-extent and --raw-type");
  }
  return in;
}

void build(CLI::App& app, state& st) {
  app.description(
      "voxstream: process 3D volumes on CUDA streams (backend: " + std::string(backend_name()) +
      ")");
  app.set_version_flag("--version", std::string("voxstream ") + kVersion + " (" +
                                        backend_name() + " backend)");
  app.require_subcommand(1, 1);

  // info
  auto* info = app.add_subcommand("info", "print a volume file's extent, type, spacing and "
                                          "value range");
  info->add_option("file", st.info_in, "the volume file (NRRD, MetaImage, TIFF, or raw with "
                                       "--raw-extent)")
      ->required();
  info->add_flag("--header-only", st.header_only, "do not read the voxels (no value range)");
  add_raw(info, st.info_raw);
  add_common(info, st.info_c, false);
  st.info_cmd = info;

  // run
  auto* run = app.add_subcommand("run", "apply ops to a volume, in command-line order");
  run->add_option("input", st.run_in, "the input volume file")->required();
  run->add_option("-o,--output", st.run_out,
                  "the output file; the format follows the extension (.nrrd .nhdr .mha .mhd "
                  ".raw .tif, .png for 2D results)")
      ->required();
  for (const std::string& name : op_names()) {
    const auto [placeholder, help] = op_help(name);
    CLI::Option* o = nullptr;
    if (op_is_flag(name)) {
      o = run->add_flag("--" + name, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    } else {
      // A value in brackets may be left out ("--label", "--label=26", "--label 26"): CLI11
      // then records an empty value, which the op's parser takes as its default.
      o = run->add_option("--" + name, help)
              ->type_name(placeholder)
              ->expected(op_value_optional(name) ? 0 : 1, 1)
              ->allow_extra_args(false)
              ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }
    o->group("Ops (applied in the order given)");
    st.op_options[o] = name;
  }
  run->add_flag("--stream", st.run_stream, "stream slab by slab even if the volume fits");
  run->add_flag("--in-memory", st.run_in_memory, "never stream");
  run->add_option("--slab-depth", st.run_slab_depth,
                  "output slices per slab when streaming (default: the most that fit --budget)")
      ->type_name("N");
  add_raw(run, st.run_raw);
  add_common(run, st.run_c, true);
  run->footer(kRunFooter);
  st.run_cmd = run;

  // mip
  auto* mip = app.add_subcommand(
      "mip", "write a maximum- (or min-, mean-) intensity projection as a grey PNG");
  mip->add_option("input", st.mip_in, "the input volume file")->required();
  mip->add_option("-o,--output", st.mip_out, "the PNG file to write")->required();
  mip->add_option("--axis", st.mip_axis, "axis to project along: x, y or z")
      ->type_name("AXIS")
      ->capture_default_str();
  mip->add_option("--slab", st.mip_slab,
                  "project only slices [A, B) along the axis (a slab MIP)")
      ->type_name("A:B");
  mip->add_option("--mode", st.mip_mode, "max, min or mean")
      ->type_name("MODE")
      ->check(CLI::IsMember({"max", "min", "mean"}))
      ->capture_default_str();
  mip->add_option("--window", st.mip_window, "grey window width (with --level)")
      ->type_name("W");
  mip->add_option("--level", st.mip_level, "grey window centre (with --window)")
      ->type_name("L");
  mip->add_option("--range", st.mip_range,
                  "values mapped to black and white (default: the projection's min and max)")
      ->type_name("LO:HI");
  mip->add_option("--bits", st.mip_bits, "PNG bit depth, 8 or 16")
      ->type_name("BITS")
      ->capture_default_str();
  mip->add_flag("--stream", st.mip_stream, "stream slab by slab even if the volume fits");
  mip->add_flag("--in-memory", st.mip_in_memory, "never stream");
  mip->add_option("--slab-depth", st.mip_slab_depth, "slices per slab when streaming")
      ->type_name("N");
  add_raw(mip, st.mip_raw);
  add_common(mip, st.mip_c, true);
  st.mip_cmd = mip;

  // stats
  auto* stats = app.add_subcommand(
      "stats", "print the region table of a label volume (or of a mask's connected components) "
               "as CSV");
  stats->add_option("input", st.stats_in,
                    "the labels: an int32 volume (as run --label writes), or a mask of any "
                    "other type, whose connected components are labelled first")
      ->required();
  stats->add_option("--values", st.stats_values,
                    "a volume of the same extent (a file with a header) for the sum, mean, min "
                    "and max columns")
      ->type_name("FILE");
  stats->add_option("--connectivity", st.stats_connectivity,
                    "label the input's components with this connectivity, also an int32 input: "
                    "6 (default for masks), 18 or 26, or 4 or 8 within each z-slice")
      ->type_name("CONN");
  add_raw(stats, st.stats_raw);
  add_common(stats, st.stats_c, false);
  stats->footer(R"(
Output (stdout), one line per label that has voxels, in label order:
  label,count,sum,mean,min,max,x0,y0,z0,x1,y1,z1,cx,cy,cz
sum..max describe the --values volume (left out without --values); [x0, x1) x [y0, y1) x
[z0, z1) is the bounding box and (cx, cy, cz) the centroid, in voxel indices.

Examples:
  voxstream run ct.nrrd -o labels.nrrd --gaussian 1 --threshold 0.3 --label
  voxstream stats labels.nrrd --values ct.nrrd > regions.csv)");
  st.stats_cmd = stats;

  // phantom
  auto* ph = app.add_subcommand("phantom", "write a 3D Shepp-Logan head phantom (computed on "
                                           "the device)");
  ph->add_option("-o,--output", st.phantom_out,
                 "the volume file to write (.nrrd .nhdr .mha .mhd .raw .tif)")
      ->required();
  ph->add_option("--size", st.ph_size, "voxels: N for a cube, or X,Y,Z")
      ->type_name("N|X,Y,Z")
      ->capture_default_str();
  ph->add_option("--type", st.ph_type, "float32 or uint16")
      ->type_name("TYPE")
      ->capture_default_str();
  ph->add_option("--scale", st.ph_scale,
                 "multiply the phantom's values (skull 1.0, brain 0.2) by S (default 1 for "
                 "float32, 1000 for uint16)")
      ->type_name("S");
  ph->add_option("--noise", st.ph_noise,
                 "add Gaussian noise of this standard deviation (in phantom units, before "
                 "--scale)")
      ->type_name("SIGMA")
      ->capture_default_str();
  ph->add_option("--seed", st.ph_seed, "seed of the noise (a whole number)")
      ->type_name("N")
      ->capture_default_str();
  add_common(ph, st.phantom_c, false);
  st.phantom_cmd = ph;
}

/// The op options of `run`, in command-line order.
std::vector<std::pair<std::string, std::string>> ordered_ops(const state& st) {
  std::vector<std::pair<std::string, std::string>> args;
  std::map<const CLI::Option*, std::size_t> seen;
  for (const CLI::Option* o : st.run_cmd->parse_order()) {
    const auto it = st.op_options.find(o);
    if (it == st.op_options.end()) continue;
    const std::size_t k = seen[o]++;
    if (op_is_flag(it->second)) {
      args.emplace_back(it->second, "");
    } else {
      const auto& res = o->results();
      if (k >= res.size()) throw usage_error("--" + it->second + ": missing value");
      args.emplace_back(it->second, res[k]);
    }
  }
  return args;
}

std::size_t to_streams(const std::string& s) {
  return static_cast<std::size_t>(to_whole(s, "--streams", 1, 1024));
}

std::size_t to_slab_depth(const std::string& s) {
  if (s.empty()) return 0;
  return static_cast<std::size_t>(
      to_whole(s, "--slab-depth", 1, std::numeric_limits<std::uint32_t>::max()));
}

run_options common_run(const common_args& c) {
  run_options r;
  r.budget = to_budget(c.budget);
  r.streams = to_streams(c.streams);
  r.progress = mode_of(c);
  return r;
}

stream_choice to_choice(bool stream, bool in_memory) {
  if (stream && in_memory) throw usage_error("--stream and --in-memory exclude each other");
  return stream ? stream_choice::always
                : (in_memory ? stream_choice::never : stream_choice::automatic);
}

/// Turns the parsed strings into the command's options (values checked here throw usage_error).
parsed_command finish(state& st) {
  parsed_command pc;
  if (st.info_cmd->parsed()) {
    pc.cmd = command::info;
    pc.quiet = st.info_c.quiet;
    pc.info.input = to_input(st.info_in, st.info_raw);
    pc.info.stats = !st.header_only;
    pc.info.budget = to_budget(st.info_c.budget);
    pc.info.streams = to_streams(st.info_c.streams);
    pc.info.progress = mode_of(st.info_c);
  } else if (st.run_cmd->parsed()) {
    pc.cmd = command::run;
    pc.quiet = st.run_c.quiet;
    pc.run = common_run(st.run_c);
    pc.run.input = to_input(st.run_in, st.run_raw);
    pc.run.output = st.run_out;
    pc.run.ops = parse_ops(ordered_ops(st));
    check_op_list(pc.run.ops);
    pc.run.streaming = to_choice(st.run_stream, st.run_in_memory);
    pc.run.slab_depth = to_slab_depth(st.run_slab_depth);
  } else if (st.mip_cmd->parsed()) {
    pc.cmd = command::mip;
    pc.quiet = st.mip_c.quiet;
    pc.mip.run = common_run(st.mip_c);
    pc.mip.run.input = to_input(st.mip_in, st.mip_raw);
    pc.mip.run.output = st.mip_out;
    pc.mip.run.streaming = to_choice(st.mip_stream, st.mip_in_memory);
    pc.mip.run.slab_depth = to_slab_depth(st.mip_slab_depth);
    pc.mip.axis = parse_axis(st.mip_axis, "--axis");
    // --mode max|min|mean names the op max-projection, min-projection or mean-projection.
    const op_entry* projection = find_op(st.mip_mode + "-projection");
    if (projection == nullptr) throw usage_error("--mode: '" + st.mip_mode + "' is not a mode");
    pc.mip.kind = projection->kind;
    if (!st.mip_slab.empty()) pc.mip.slab = parse_index_range(st.mip_slab, "--slab");
    if (st.mip_bits != "8" && st.mip_bits != "16")
      throw usage_error("--bits: '" + st.mip_bits + "' is not a PNG bit depth (expected 8 or 16)");
    const int bits = st.mip_bits == "8" ? 8 : 16;
    if (st.mip_window.has_value() != st.mip_level.has_value())
      throw usage_error("--window and --level go together");
    if (st.mip_window && !st.mip_range.empty())
      throw usage_error("--window/--level and --range exclude each other");
    if (st.mip_window) {
      const double w = to_real(*st.mip_window, "--window");
      const double l = to_real(*st.mip_level, "--level");
      if (!(w > 0)) throw usage_error("--window: " + *st.mip_window + " must be > 0");
      pc.mip.png = io::png_options::window_level(w, l, bits);
    } else if (!st.mip_range.empty()) {
      const auto r = parse_range(st.mip_range, "--range");
      if (!(r.first < r.second)) throw usage_error("--range: LO must be < HI");
      pc.mip.png = io::png_options::range(r.first, r.second, bits);
    } else {
      pc.mip.png = io::png_options::min_max(bits);
    }
  } else if (st.stats_cmd->parsed()) {
    pc.cmd = command::stats;
    pc.quiet = st.stats_c.quiet;
    pc.stats.labels = to_input(st.stats_in, st.stats_raw);
    if (!st.stats_values.empty()) pc.stats.values = st.stats_values;
    if (!st.stats_connectivity.empty())
      pc.stats.connectivity = parse_connectivity(st.stats_connectivity, "--connectivity");
    pc.stats.budget = to_budget(st.stats_c.budget);
    pc.stats.streams = to_streams(st.stats_c.streams);
    pc.stats.progress = mode_of(st.stats_c);
  } else if (st.phantom_cmd->parsed()) {
    pc.cmd = command::phantom;
    pc.quiet = st.phantom_c.quiet;
    pc.phantom.output = st.phantom_out;
    pc.phantom.phantom.extent = parse_extent(st.ph_size, "--size");
    pc.phantom.phantom.type = parse_dtype(st.ph_type, "--type");
    if (pc.phantom.phantom.type != dtype::float32 && pc.phantom.phantom.type != dtype::uint16)
      throw usage_error("--type: the phantom is float32 or uint16");
    pc.phantom.phantom.scale = st.ph_scale ? to_real(*st.ph_scale, "--scale")
                                           : (pc.phantom.phantom.type == dtype::uint16 ? 1000.0
                                                                                       : 1.0);
    pc.phantom.phantom.noise = to_real(st.ph_noise, "--noise");
    if (pc.phantom.phantom.noise < 0)
      throw usage_error("--noise: " + st.ph_noise + " must be >= 0 (a standard deviation)");
    pc.phantom.phantom.seed =
        to_whole(st.ph_seed, "--seed", 0, std::numeric_limits<std::uint64_t>::max());
    pc.phantom.budget = to_budget(st.phantom_c.budget);
    pc.phantom.streams = to_streams(st.phantom_c.streams);
    pc.phantom.progress = mode_of(st.phantom_c);
  }
  return pc;
}

int dispatch_command(const parsed_command& pc) {
  switch (pc.cmd) {
    case command::info:
      return cmd_info(pc.info, stdout);
    case command::run:
      return cmd_run(pc.run, pc.quiet, stdout);
    case command::mip:
      return cmd_mip(pc.mip, pc.quiet, stdout);
    case command::stats:
      return cmd_stats(pc.stats, stdout);
    case command::phantom:
      return cmd_phantom(pc.phantom, pc.quiet, stdout);
    case command::none:
    default:
      throw usage_error("no command given");
  }
}

/// A first argument that is neither an option nor a command: CLI11 would only say that a
/// subcommand is required.
void check_command_name(const std::vector<std::string>& args) {
  if (args.empty() || args[0].empty() || args[0][0] == '-') return;
  for (const char* c : {"info", "run", "mip", "stats", "phantom"})
    if (args[0] == c) return;
  throw usage_error("unknown command '" + args[0] +
                    "' (expected info, run, mip, stats or phantom)");
}

}  // namespace

parsed_command parse_args(const std::vector<std::string>& args) {
  CLI::App app{"", "voxstream"};
  state st;
  build(app, st);
  check_command_name(args);
  std::vector<std::string> rev(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    throw usage_error(e.get_name() + ": " + e.what());
  }
  return finish(st);
}

std::string user_message(std::string_view what) {
  std::string s(what);
  // Where in the library's sources an error was raised: " (src/io/format.cpp:917)".
  static const std::regex where(R"( \([^()]*\.(cpp|cu|cuh|hpp|h):[0-9]+\))");
  // "voxstream: " and internal function names ("io::write: ") at the start of a nested message.
  static const std::regex prefix(R"((^|: )(voxstream|[A-Za-z_]\w*(::[A-Za-z_~]\w*)+(\(\))?): )");
  s = std::regex_replace(s, where, "");
  for (std::string prev; prev != s;) {
    prev = s;
    s = std::regex_replace(s, prefix, "$1");
  }
  // A nested message names the op again ("probe: 'a.nhdr': ...: probe: 'a.raw': ..."): once.
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t p = s.find(": ", start);
    parts.push_back(s.substr(start, p == std::string::npos ? p : p - start));
    if (p == std::string::npos) break;
    start = p + 2;
  }
  const auto is_word = [](const std::string& w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
  };
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0 && parts[i] == parts[i - 1]) continue;
    if (i > 0 && is_word(parts[i]) && parts[i] == parts[0]) continue;
    if (!out.empty()) out += ": ";
    out += parts[i];
  }
  return out;
}

namespace {

int usage_failure(const std::string& message) {
  std::fprintf(stderr, "voxstream: error: %s\nRun with --help for more information.\n",
               user_message(message).c_str());
  return 2;
}

int failure(const std::string& message) {
  std::fprintf(stderr, "voxstream: error: %s\n", user_message(message).c_str());
  return 1;
}

}  // namespace

int main_entry(int argc, char** argv) {
  // Before any other thread starts: SIGINT and SIGTERM then remove the partial output.
  install_signal_cleanup();
  CLI::App app{"", "voxstream"};
  state st;
  build(app, st);
  try {
    check_command_name(std::vector<std::string>(argv + (argc > 0 ? 1 : 0), argv + argc));
  } catch (const usage_error& e) {
    return usage_failure(e.what());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: on stdout
    return usage_failure(e.what());
  }
  try {
    return dispatch_command(finish(st));
  } catch (const usage_error& e) {
    return usage_failure(e.what());
  } catch (const std::exception& e) {
    // The library's messages read "voxstream: <op>: <what> (<file>:<line>)"; the user gets
    // <what> (see user_message).
    return failure(e.what());
  }
}

}  // namespace vox::cli
