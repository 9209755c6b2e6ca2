#include "commands.hpp"

#include "output_guard.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <variant>

#include <voxstream/io/png.hpp>

#include <voxstream/ops/label.hpp>

#include "../../src/io/detail/text.hpp"
#include "engine_detail.hpp"
#include "op_runners.hpp"
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

std::string region_csv(const std::vector<region_row>& rows, bool values) {
  // "nan" whatever the sign bit that the device's arithmetic left on a NaN.
  const auto field = [](double v) { return std::isnan(v) ? std::string("nan") : num(v); };
  std::string s = values ? "label,count,sum,mean,min,max,x0,y0,z0,x1,y1,z1,cx,cy,cz\n"
                         : "label,count,x0,y0,z0,x1,y1,z1,cx,cy,cz\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const region_row& r = rows[i];
    if (r.count == 0) continue;  // a label without voxels is no region
    s += std::to_string(i + 1) + "," + std::to_string(r.count);
    if (values)
      s += "," + field(r.sum) + "," + field(r.mean) + "," + field(r.min) + "," + field(r.max);
    for (int a = 0; a < 3; ++a) s += "," + std::to_string(r.bbox_lo[a]);
    for (int a = 0; a < 3; ++a) s += "," + std::to_string(r.bbox_hi[a]);
    for (int a = 0; a < 3; ++a) s += "," + field(r.centroid[a]);
    s += "\n";
  }
  return s;
}

int cmd_stats(const stats_options& opt, std::FILE* out) {
  const io::volume_info info = probe_input(opt.labels);
  std::optional<io::volume_info> vinfo;
  if (opt.values) {
    vinfo = io::probe(*opt.values);
    if (vinfo->extent != info.extent)
      throw usage_error("--values '" + opt.values->string() + "': its extent " +
                        vinfo->extent.str() + " differs from the labels' " + info.extent.str());
  }
  const bool relabel = info.type != dtype::int32 || opt.connectivity != 0;
  const int connectivity = opt.connectivity != 0 ? opt.connectivity : 6;
  // The input, its labels (int32) and the values in device memory at once.
  const std::size_t n = info.extent.voxels();
  const std::size_t need = n * dtype_size(info.type) + (relabel ? 4 * n : 0) +
                           (vinfo ? n * dtype_size(vinfo->type) : 0);
  const std::size_t budget = opt.budget != 0 ? opt.budget : default_budget();
  if (need > budget)
    throw usage_error("stats needs the whole volume in device memory: about " +
                      format_bytes(need) + ", more than --budget " + format_bytes(budget) +
                      " (raise --budget)");
  stream_set s(std::max<std::size_t>(1, opt.streams));
  // Steps: reading (the labels, the values), labelling or counting, the table.
  const std::size_t steps = vinfo ? 4 : 3;
  std::size_t done = 0;
  progress_reporter bar("stats", "steps", terminal_only(opt.progress));
  bar.update(done, steps);
  const io::any_host_volume host = read_input(opt.labels, info);
  const any_volume in = upload_input(s, host, info);
  bar.update(++done, steps);
  std::optional<io::any_host_volume> vhost;
  std::optional<any_volume> vals;
  if (vinfo) {
    vhost = read_input(input_spec{*opt.values, std::nullopt}, *vinfo);
    vals = upload_input(s, *vhost, *vinfo);
    bar.update(++done, steps);
  }
  const labelled regions = label_regions(s, ref_of(in), connectivity, relabel);
  bar.update(++done, steps);
  const volume<std::int32_t>& labels = regions.labels();
  const region_table table =
      vals ? visit_volume(ref_of(*vals),
                          [&](const auto& v) { return region_stats(s, labels, v, regions.count); })
           : region_stats(s, labels, labels, regions.count);
  const std::string csv = region_csv(table.rows(), vals.has_value());
  s.synchronize();  // the uploads have completed: the host copies may go
  bar.update(++done, steps);
  bar.finish();
  std::fputs(csv.c_str(), out);
  return 0;
}

}  // namespace vox::cli
