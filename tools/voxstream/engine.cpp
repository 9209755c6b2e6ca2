// execute() of the engine (engine.hpp): checks, then an in-memory or a streamed run
// (engine_detail.hpp); and the input and output helpers of the commands.
#include "engine.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <voxstream/config.hpp>
#include <voxstream/core/error.hpp>

#include "engine_detail.hpp"
#include "output_guard.hpp"

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>
#endif

namespace vox::cli {

// --- inputs, budget ------------------------------------------------------------------------------

io::volume_info probe_input(const input_spec& in) {
  if (in.raw) return io::raw_info(in.path, *in.raw);
  try {
    return io::probe(in.path);
  } catch (const io::io_error& e) {
    // A file without a header the library knows: say how the tool reads headerless data.
    const std::string what = e.what();
    if (what.find("unrecognised format") == std::string::npos) throw;
    throw io::io_error(
        "'" + in.path.string() +
            "': not a NRRD, MetaImage or TIFF file. If it is headerless raw data, give its "
            "layout: --raw-extent X,Y,Z --raw-type TYPE (uint8, uint16, int16, int32, float32 or "
            "float64), and --raw-offset BYTES / --big-endian when needed",
        in.path.string());
  }
}

std::size_t default_budget() {
  constexpr std::size_t one_gib = std::size_t{1} << 30;
#if VOX_BACKEND_CUDA
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess || free_bytes == 0) {
    (void)cudaGetLastError();
    return one_gib;
  }
  return static_cast<std::size_t>(static_cast<double>(free_bytes) * 0.8);
#else
  return one_gib;
#endif
}

namespace {

// --- output checks --------------------------------------------------------------------------------

void check_output(const std::filesystem::path& out, const extent3& result, bool sink_streamed) {
  if (out.empty()) return;
  const auto f = io::format_from_extension(out);
  if (!f)
    throw usage_error("output '" + out.string() +
                      "': unknown extension (use .nrrd, .nhdr, .mha, .mhd, .raw, .tif or .png)");
  if (*f == io::file_format::png && result.z != 1)
    throw usage_error("output '" + out.string() + "': a PNG holds a 2D image, but the result is " +
                      result.str() + " (end the ops with a projection, or write a volume format)");
  if (sink_streamed && *f != io::file_format::raw && *f != io::file_format::nrrd &&
      *f != io::file_format::metaimage)
    throw usage_error("output '" + out.string() +
                      "': a streamed run writes .nrrd, .nhdr, .mha, .mhd or .raw files");
  if (*f == io::file_format::tiff && !io::tiff_supported())
    throw usage_error("output '" + out.string() + "': this build has no TIFF support (libtiff)");
}

/// Ops whose result is global (labels, distances, holes) need the whole volume at once: a run
/// that would stream is refused, with what to do instead.
void check_not_whole_volume(const std::vector<op_spec>& ops, stream_choice how, std::size_t peak,
                            std::size_t budget) {
  for (const op_spec& op : ops) {
    if (!needs_whole_volume(op)) continue;
    const std::string what = "'" + op.text + "' needs the whole volume in device memory";
    if (how == stream_choice::always)
      throw usage_error(what + " and cannot run in a streamed run (leave out --stream)");
    throw usage_error(what + ": the run needs about " + format_bytes(peak) +
                      ", more than --budget " + format_bytes(budget) +
                      " (raise --budget, or force --in-memory)");
  }
}

}  // namespace

run_result execute(const run_options& opt) {
  check_op_list(opt.ops);
  const io::volume_info info = probe_input(opt.input);
  const extent3 out_e = result_extent(opt.ops, info.extent);
  const std::size_t budget = opt.budget != 0 ? opt.budget : default_budget();
  const std::size_t peak = peak_device_bytes(opt.ops, info.extent, info.type);
  const bool stream = opt.streaming == stream_choice::always ||
                      (opt.streaming == stream_choice::automatic && peak > budget);
  if (stream) check_not_whole_volume(opt.ops, opt.streaming, peak, budget);
  const bool terminal = !opt.ops.empty() && is_terminal(opt.ops.back());
  check_output(opt.output, out_e, stream && !terminal);
  if (stream && !terminal && opt.output.empty())
    throw usage_error("a streamed run needs an output file");
  if (!opt.output.empty()) {
    check_output_writable(opt.output);
    (void)sweep_stale_temporaries(opt.output);
    watch_output(opt.output);
  }
  stream_set s(std::max<std::size_t>(1, opt.streams));
  if (!stream) {
    run_result r = run_in_memory(opt, info, s);
    r.budget = budget;
    return r;
  }
  run_result r = run_streamed(opt, info, s, budget);
  if (opt.write && r.image) opt.write(*r.image, r.geo);
  return r;
}

void write_result(const std::filesystem::path& path, const io::any_host_volume& v,
                  const geometry& geo) {
  io::write_options wo;
  wo.spacing = geo.spacing;
  wo.origin = geo.origin;
  io::write_any(path, v, wo);
}

}  // namespace vox::cli
