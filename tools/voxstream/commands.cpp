#include "commands.hpp"

#include "output_guard.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <variant>

#include <voxstream/io/png.hpp>

#include "../../src/io/detail/text.hpp"
#include "ops_table.hpp"

namespace vox::cli {

namespace {

std::string num(double v) { return io::detail::format_double(v); }

std::string vec(const vec3d& v) { return num(v.x) + " " + num(v.y) + " " + num(v.z); }

std::string g6(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

const char* encoding_name(io::encoding e) {
  switch (e) {
    case io::encoding::raw:
      return "raw";
    case io::encoding::gzip:
      return "gzip";
    case io::encoding::other:
    default:
      return "compressed";
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// "in memory (budget 1.00 GiB)" or "streamed: 8 slabs of 16 slices, halo 5 (budget 2.00 GiB)".
std::string how(const run_result& r) {
  std::string s;
  if (r.streamed) {
    s = "streamed: " + std::to_string(r.slabs) + " slabs of " + std::to_string(r.slab_depth) +
        " slices, halo " + std::to_string(r.halo);
    if (r.passes > 1) s += ", " + std::to_string(r.passes) + " passes";
  } else {
    s = "in memory";
  }
  return s + " (budget " + format_bytes(r.budget) + ")";
}

const char* axis_name(projection_axis a) {
  return a == projection_axis::x ? "x" : (a == projection_axis::y ? "y" : "z");
}

}  // namespace

std::string describe(const io::volume_info& info, const value_stats* stats) {
  std::string s;
  s += "file:     " + info.header_file.string() + "\n";
  s += std::string("format:   ") + io::format_name(info.format);
  s += std::string(" (") + encoding_name(info.enc) + ", " +
       (info.order == io::byte_order::little ? "little" : "big") + "-endian";
  if (info.detached) s += ", data in " + info.data_file.string();
  s += ")\n";
  s += "extent:   " + std::to_string(info.extent.x) + " x " + std::to_string(info.extent.y) +
       " x " + std::to_string(info.extent.z) + " (" + std::to_string(info.extent.voxels()) +
       " voxels, " + format_bytes(static_cast<std::size_t>(info.data_bytes())) + ")\n";
  s += std::string("type:     ") + dtype_name(info.type) + "\n";
  s += "spacing:  " + vec(info.spacing) + "\n";
  s += "origin:   " + vec(info.origin) + "\n";
  if (stats != nullptr) {
    s += "range:    " + num(stats->min) + " .. " + num(stats->max) + "\n";
    s += "mean:     " + g6(stats->mean) + "\n";
    s += "stddev:   " + g6(stats->stddev) + "\n";
  }
  return s;
}

int cmd_info(const info_options& opt, std::FILE* out) {
  const io::volume_info info = probe_input(opt.input);
  value_stats st;
  if (opt.stats) st = file_stats(opt.input, info, opt.budget, opt.streams, opt.progress);
  std::fputs(describe(info, opt.stats ? &st : nullptr).c_str(), out);
  return 0;
}

int cmd_run(const run_options& opt, bool quiet, std::FILE* out) {
  const auto t0 = std::chrono::steady_clock::now();
  run_options ro = opt;
  ro.write = [&](const io::any_host_volume& v, const geometry& g) {
    write_result(opt.output, v, g);
  };
  const run_result r = execute(ro);
  if (!quiet)
    std::fprintf(out, "wrote %s: %s %s, %s in %s\n", opt.output.string().c_str(),
                 r.extent.str().c_str(), dtype_name(r.type), how(r).c_str(),
                 format_duration(seconds_since(t0)).c_str());
  return 0;
}

int cmd_mip(const mip_options& opt, bool quiet, std::FILE* out) {
  const auto t0 = std::chrono::steady_clock::now();
  run_options ro = opt.run;
  op_spec op;
  op.kind = opt.kind;
  op.paxis = opt.axis;
  std::string title = entry_of(opt.kind).name;  // "max-projection": "max projection"
  std::replace(title.begin(), title.end(), '-', ' ');
  op.text = title + " along " + axis_name(opt.axis);
  ro.ops = {op};
  if (opt.slab) {
    ro.ops.insert(ro.ops.begin(), crop_along(opt.axis, opt.slab->first, opt.slab->second));
    op.text += " of slices " + std::to_string(opt.slab->first) + ".." +
               std::to_string(opt.slab->second - 1);
  }
  ro.label = "mip";
  const auto f = io::format_from_extension(ro.output);
  if (!f || *f != io::file_format::png)
    throw usage_error("mip: the output must be a .png file, not '" + ro.output.string() + "'");
  ro.write = [&](const io::any_host_volume& v, const geometry&) {
    std::visit([&](const auto& h) { io::write_png(ro.output, h, opt.png); }, v);
  };
  const run_result r = execute(ro);
  if (!quiet)
    std::fprintf(out, "wrote %s: %zux%zu %s (%s; %s) in %s\n", ro.output.string().c_str(),
                 r.extent.x, r.extent.y, op.text.c_str(), dtype_name(r.type), how(r).c_str(),
                 format_duration(seconds_since(t0)).c_str());
  return 0;
}

int cmd_phantom(const phantom_command& opt, bool quiet, std::FILE* out) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto f = io::format_from_extension(opt.output);
  if (!f)
    throw usage_error("phantom: output '" + opt.output.string() +
                      "': unknown extension (use .nrrd, .nhdr, .mha, .mhd, .raw or .tif)");
  if (*f == io::file_format::png && opt.phantom.extent.z != 1)
    throw usage_error("phantom: a PNG holds one slice; write a volume format (.nrrd, .mha, ...)");
  check_output_writable(opt.output);
  (void)sweep_stale_temporaries(opt.output);
  watch_output(opt.output);
  stream_set streams(std::max<std::size_t>(1, opt.streams));
  // Steps: each slab made on the device, then writing the file.
  progress_reporter bar("phantom", "steps", terminal_only(opt.progress));
  std::size_t slabs = 0;
  write_phantom(opt.output, opt.phantom, streams, opt.budget != 0 ? opt.budget : default_budget(),
                [&](std::size_t done, std::size_t total) {
                  slabs = total;
                  bar.update(done, total + 1);
                });
  bar.update(slabs + 1, slabs + 1);
  bar.finish();
  if (!quiet)
    std::fprintf(out, "wrote %s: %s %s Shepp-Logan phantom (%zu slab%s) in %s\n",
                 opt.output.string().c_str(), opt.phantom.extent.str().c_str(),
                 dtype_name(opt.phantom.type), slabs, slabs == 1 ? "" : "s",
                 format_duration(seconds_since(t0)).c_str());
  return 0;
}

}  // namespace vox::cli
