#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include <voxstream/config.hpp>
#include <voxstream/core/dtype.hpp>
#include <voxstream/core/error.hpp>
#include <voxstream/io/host_volume.hpp>
#include <voxstream/io/stream_process.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/filter.hpp>
#include <voxstream/ops/geometry.hpp>
#include <voxstream/ops/projection.hpp>
#include <voxstream/ops/reduce.hpp>

#include "device_ops.hpp"
#include "output_guard.hpp"

#if VOX_BACKEND_CUDA
#include <cuda_runtime_api.h>
#endif

namespace vox::cli {

namespace {

dtype type_of(const any_volume& v) { return static_cast<dtype>(v.index()); }

template <class T>
void set_geometry(volume<T>& v, const geometry& g) {
  v.set_spacing(g.spacing);
  v.set_origin(g.origin);
}

geometry geometry_of_info(const io::volume_info& info) { return {info.spacing, info.origin}; }

template <class T>
filter_size window(const op_spec& op) {
  return filter_size{op.size.x, op.size.y, op.size.z};
}

template <class T, class R>
void project(stream_set& s, const op_spec& op, const volume<T>& in, volume<R>& out) {
  if constexpr (std::is_same_v<T, R>) {
    if (op.kind == op_kind::max_projection) return max_projection(s, in, out, op.paxis);
    if (op.kind == op_kind::min_projection) return min_projection(s, in, out, op.paxis);
  }
  if constexpr (std::is_floating_point_v<R>) {
    if (op.kind == op_kind::mean_projection) return mean_projection<T, R>(s, in, out, op.paxis);
  }
  VOX_FAIL("run", "internal: projection " + op.text + " with these voxel types");
}

}  // namespace

// --- one op ------------------------------------------------------------------------------------

template <class T>
any_volume apply_op(stream_set& s, const op_spec& op, const volume<T>& in) {
  using R = filter_real_t<T>;
  const extent3 e = in.extent();
  const geometry g = result_geometry(op, geometry{in.spacing(), in.origin()});
  auto done = [&](auto&& out) -> any_volume {
    set_geometry(out, g);
    return any_volume(std::move(out));
  };
  switch (op.kind) {
    case op_kind::gaussian: {
      volume<R> out(s, e);
      gaussian(s, in, out, sigma3{op.sigma.x, op.sigma.y, op.sigma.z});
      return done(std::move(out));
    }
    case op_kind::uniform: {
      volume<T> out(s, e);
      uniform(s, in, out, window<T>(op));
      return done(std::move(out));
    }
    case op_kind::median: {
      volume<T> out(s, e);
      median(s, in, out, window<T>(op));
      return done(std::move(out));
    }
    case op_kind::erode: {
      volume<T> out(s, e);
      grey_erosion(s, in, out, window<T>(op));
      return done(std::move(out));
    }
    case op_kind::dilate: {
      volume<T> out(s, e);
      grey_dilation(s, in, out, window<T>(op));
      return done(std::move(out));
    }
    case op_kind::sobel: {
      volume<R> out(s, e);
      sobel(s, in, out, op.axis);
      return done(std::move(out));
    }
    case op_kind::gradient_magnitude: {
      volume<R> out(s, e);
      gradient_magnitude(s, in, out);
      return done(std::move(out));
    }
    case op_kind::threshold: {
      volume<std::uint8_t> out(s, e);
      if (op.range)
        threshold_range(s, in, out, op.a, op.b);
      else
        threshold(s, in, out, op.a);
      return done(std::move(out));
    }
    case op_kind::clamp: {
      volume<T> out(s, e);
      clamp(s, in, out, saturate_cast<T>(op.a), saturate_cast<T>(op.b));
      return done(std::move(out));
    }
    case op_kind::rescale: {
      volume<R> out(s, e);
      rescale<T, R>(s, in, out, op.a, op.b);
      return done(std::move(out));
    }
    case op_kind::normalize: {
      volume<R> out(s, e);
      if (op.range_known) {
        const double range = op.known_max - op.known_min;
        const double scale = range > 0 ? (op.b - op.a) / range : 0.0;
        normalize_with<T, R>(s, in, out, op.known_min, scale, op.a);
      } else {
        normalize<T, R>(s, in, out, op.a, op.b);
      }
      return done(std::move(out));
    }
    case op_kind::convert:
      return visit_dtype(op.type, [&](auto t) -> any_volume {
        using U = typename decltype(t)::type;
        volume<U> out(s, e);
        convert<T, U>(s, in, out);
        return done(std::move(out));
      });
    case op_kind::crop: {
      volume<T> out(s, result_extent(op, e));
      crop(s, in, out, crop_box(op, e).first);
      return done(std::move(out));
    }
    case op_kind::downsample: {
      volume<T> out(s, result_extent(op, e));
      downsample_mean(s, in, out, op.size);
      return done(std::move(out));
    }
    case op_kind::max_projection:
    case op_kind::min_projection: {
      volume<T> out(s, projection_extent(e, op.paxis));
      project(s, op, in, out);
      return done(std::move(out));
    }
    case op_kind::mean_projection: {
      volume<R> out(s, projection_extent(e, op.paxis));
      project(s, op, in, out);
      return done(std::move(out));
    }
  }
  VOX_FAIL("run", "internal: unknown op " + op.text);
}

#define VOX_CLI_INSTANTIATE(T) \
  template any_volume apply_op<T>(stream_set&, const op_spec&, const volume<T>&);
VOX_CLI_INSTANTIATE(std::uint8_t)
VOX_CLI_INSTANTIATE(std::uint16_t)
VOX_CLI_INSTANTIATE(std::int16_t)
VOX_CLI_INSTANTIATE(std::int32_t)
VOX_CLI_INSTANTIATE(float)
VOX_CLI_INSTANTIATE(double)
#undef VOX_CLI_INSTANTIATE

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

// --- helpers on any_volume / host volumes -----------------------------------------------------

io::any_host_volume read_input(const input_spec& in, const io::volume_info& info) {
  if (!in.raw) return io::read_any(in.path);
  return visit_dtype(info.type, [&](auto t) -> io::any_host_volume {
    using T = typename decltype(t)::type;
    host_volume<T> h;
    (void)io::read_raw<T>(in.path, *in.raw, h);
    return io::any_host_volume(std::move(h));
  });
}

template <class T>
io::any_host_volume to_host(stream_set& s, const volume<T>& v) {
  host_volume<T> h(v.extent());
  download(s, v, h);
  h.synchronize();
  return io::any_host_volume(std::move(h));
}

any_volume apply_any(stream_set& s, const op_spec& op, const any_volume& v) {
  return std::visit([&](const auto& vol) { return apply_op(s, op, vol); }, v);
}

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

template <class V>
struct voxel_of;
template <class T>
struct voxel_of<host_volume<T>> {
  using type = T;
};
template <class T>
struct voxel_of<volume<T>> {
  using type = T;
};
template <class V>
using voxel_t = typename voxel_of<std::decay_t<V>>::type;

// --- in memory ------------------------------------------------------------------------------------

run_result run_in_memory(const run_options& opt, const io::volume_info& info, stream_set& s) {
  run_result r;
  // Steps: reading, each op, the result to the host, writing it. Each op is waited for when the
  // progress is shown, so that the steps are real (ops are asynchronous on the cuda backend).
  const std::size_t steps = opt.ops.size() + 2 + (opt.write ? 1 : 0);
  progress_reporter bar(opt.label, "steps", terminal_only(opt.progress));
  const bool shown = bar.mode() != progress_mode::off;
  std::size_t done = 0;
  bar.update(done, steps);
  const io::any_host_volume host = read_input(opt.input, info);
  any_volume cur = std::visit(
      [&](const auto& h) -> any_volume {
        using T = voxel_t<decltype(h)>;
        volume<T> v(s, h.extent());
        upload(s, h, v);
        set_geometry(v, geometry_of_info(info));
        return any_volume(std::move(v));
      },
      host);
  bar.update(++done, steps);
  for (const op_spec& op : opt.ops) {
    any_volume next = apply_any(s, op, cur);
    cur = std::move(next);
    if (shown) s.synchronize();
    bar.update(++done, steps);
  }
  r.image = std::visit([&](const auto& v) { return to_host(s, v); }, cur);
  bar.update(++done, steps);
  std::visit(
      [&](const auto& v) {
        r.extent = v.extent();
        r.geo = geometry{v.spacing(), v.origin()};
      },
      cur);
  r.type = type_of(cur);
  if (opt.write) {
    opt.write(*r.image, r.geo);
    bar.update(++done, steps);
  }
  return r;
}

// --- streamed -------------------------------------------------------------------------------------

/// The input file as a slab source; with `z_window` [z0, z1) only those slices (a crop along z
/// at the start of a streamed run reads nothing else).
template <class In>
slab_source<In> make_source(const input_spec& in, std::size_t z0, std::size_t z1) {
  slab_source<In> src = in.raw ? raw_file_source<In>(in.path, *in.raw) : file_source<In>(in.path);
  if (z0 == 0 && z1 == src.extent.z) return src;
  auto inner = src.read;
  src.read = [inner, z0](std::size_t a, std::size_t b, In* dst) { inner(a + z0, b + z0, dst); };
  src.extent.z = z1 - z0;
  src.origin.z += static_cast<double>(z0) * src.spacing.z;
  src.pinned = nullptr;
  return src;
}

/// Runs `chain` on the slab `in` (by reference when the chain is empty).
template <class In, class F>
void with_chain_result(stream_set& s, const std::vector<op_spec>& chain, const volume<In>& in,
                       F&& f) {
  if (chain.empty()) {
    f(in);
    return;
  }
  any_volume cur = apply_op(s, chain.front(), in);
  for (std::size_t i = 1; i < chain.size(); ++i) {
    any_volume next = apply_any(s, chain[i], cur);
    cur = std::move(next);
  }
  std::visit([&](const auto& v) { f(v); }, cur);
}

/// The accumulator of a projection or downsampling that ends a streamed run.
struct terminal_state {
  op_spec op;
  extent3 full;  ///< extent of the terminal op's input (after the chain)
  std::optional<any_volume> acc;
};

template <class T>
volume<T>& acc_as(terminal_state& t) {
  return std::get<volume<T>>(*t.acc);
}

/// Applies the terminal op to the interior slices [z0, z0 + interior.z) of a slab and combines the
/// result into the accumulator. Asynchronous.
template <class T>
void terminal_slab(stream_set& s, terminal_state& t, const volume<T>& interior, std::size_t z0) {
  using R = filter_real_t<T>;
  const op_spec& op = t.op;
  const extent3 ie = interior.extent();
  if (op.kind == op_kind::downsample) {
    const std::size_t dz = ie.z / op.size.z;  // slab depths are multiples of the z factor
    if (dz == 0) return;                      // the trailing partial block is dropped
    volume<T> part(s, extent3{ie.x / op.size.x, ie.y / op.size.y, dz});
    downsample_mean(s, interior, part, op.size);
    if (!t.acc) t.acc = volume<T>(s, result_extent(op, t.full));
    place(s, part, acc_as<T>(t), 0, z0 / op.size.z);
    return;
  }
  const bool mean = op.kind == op_kind::mean_projection;
  if (op.paxis == projection_axis::z) {
    if (mean) {
      volume<double> part(s, projection_extent(ie, op.paxis));
      mean_projection<T, double>(s, interior, part, op.paxis);
      if (!t.acc) t.acc = volume<double>(s, part.extent(), 0.0);
      accumulate_weighted(s, part, static_cast<double>(ie.z), acc_as<double>(t));
    } else {
      volume<T> part(s, projection_extent(ie, op.paxis));
      project(s, op, interior, part);
      if (!t.acc) {
        t.acc = std::move(part);
      } else {
        accumulate(s, part, acc_as<T>(t),
                   op.kind == op_kind::max_projection ? combine::max : combine::min);
      }
    }
    return;
  }
  // Along x or y, the slab's slices are rows [z0, z1) of the picture.
  auto rows = [&](auto tg) {
    using P = typename decltype(tg)::type;
    volume<P> part(s, projection_extent(ie, op.paxis));
    project(s, op, interior, part);
    if (!t.acc) t.acc = volume<P>(s, projection_extent(t.full, op.paxis));
    place(s, part, acc_as<P>(t), z0, 0);
  };
  if (mean)
    rows(dtype_tag<R>{});
  else
    rows(dtype_tag<T>{});
}

/// The accumulated result of the terminal op, in its final type. Asynchronous.
template <class T>
any_volume finish_terminal(stream_set& s, terminal_state& t) {
  VOX_EXPECTS(t.acc.has_value(), "run", "internal: no slab reached the projection");
  if (t.op.kind == op_kind::mean_projection && t.op.paxis == projection_axis::z) {
    using R = filter_real_t<T>;
    volume<double>& sum = acc_as<double>(t);
    divide(s, sum, static_cast<double>(t.full.z), sum);
    if constexpr (std::is_same_v<R, double>) {
      return any_volume(std::move(sum));
    } else {
      volume<R> out(s, sum.extent());
      convert<double, R>(s, sum, out);
      return any_volume(std::move(out));
    }
  }
  return std::move(*t.acc);
}

/// The (In, Out) pairs src/io/stream_process.cu instantiates: In -> In, float, double, uint8.
template <class In, class Out>
inline constexpr bool has_stream_process =
    std::is_same_v<In, Out> || std::is_same_v<Out, float> || std::is_same_v<Out, double> ||
    std::is_same_v<Out, std::uint8_t>;

/// Calls f(dtype_tag<Out>{}) with Out the voxel type `want` when stream_process<In, Out>
/// exists, and double otherwise (every voxel type converts to double and back exactly).
template <class In, class F>
decltype(auto) with_out_type(dtype want, F&& f) {
  return visit_dtype(want, [&](auto tg) -> decltype(auto) {
    using W = typename decltype(tg)::type;
    if constexpr (has_stream_process<In, W>)
      return f(dtype_tag<W>{});
    else
      return f(dtype_tag<double>{});
  });
}

/// One pass of stream_process over the input: `chain` on every slab, then either the sink (the
/// chain's result converted to Out) or the terminal op (then Out is In and the sink discards).
template <class In, class Out>
stream_report stream_pass(const run_options& opt, const io::volume_info& info,
                          const std::vector<op_spec>& chain, terminal_state* term,
                          slab_sink<Out>& sink, std::size_t depth, stream_set& s,
                          const std::string& label,
                          std::pair<std::size_t, std::size_t> z_window) {
  static_assert(has_stream_process<In, Out>, "stream_process<In, Out> is not instantiated");
  const std::size_t halo = std::min(halo_of(chain), info.extent.z);
  // A downsampling terminal needs every slab's depth a multiple of its z factor: no thinner
  // slabs at the ends then.
  const bool ramp = term == nullptr || term->op.kind != op_kind::downsample;
  const slab_pipeline_at<In, Out> pipeline = [&](stream_set& ss, const volume<In>& in,
                                                 volume<Out>& out, const slab_position& p) {
    with_chain_result(ss, chain, in, [&](const auto& res) {
      using T = voxel_t<decltype(res)>;
      if (term == nullptr) {
        if constexpr (std::is_same_v<T, Out>)
          copy(ss, res, out);
        else
          convert<T, Out>(ss, res, out);
        return;
      }
      const std::size_t depth_here = p.out.depth();
      if (p.halo_lo() == 0 && res.extent().z == depth_here) {
        terminal_slab(ss, *term, res, p.out.z0);
      } else {
        volume<T> interior(ss, extent3{res.extent().x, res.extent().y, depth_here});
        crop(ss, res, interior, extent3{0, 0, p.halo_lo()});
        terminal_slab(ss, *term, interior, p.out.z0);
      }
    });
  };
  progress_reporter bar(label, "slabs", opt.progress);
  stream_options so;
  so.device_budget_bytes = 0;  // the depth was fitted to the budget already
  so.ramp = ramp;
  so.progress = [&](std::size_t done, std::size_t total) { bar.update(done, total); };
  const slab_source<In> source = make_source<In>(opt.input, z_window.first, z_window.second);
  stream_report rep = stream_process<In, Out>(source, sink, depth, halo, pipeline, s, so);
  bar.finish();
  return rep;
}

/// A sink of Out that converts each slab to F and hands it to `inner` (for result types that
/// stream_process is not instantiated for).
template <class Out, class F>
slab_sink<Out> converting_sink(slab_sink<F> inner) {
  auto in = std::make_shared<slab_sink<F>>(std::move(inner));
  auto buf = std::make_shared<std::vector<F>>();
  slab_sink<Out> s;
  s.extent = in->extent;
  s.name = in->name;
  const std::size_t slice = in->extent.slice_voxels();
  s.write = [in, buf, slice](std::size_t z0, std::size_t z1, const Out* src) {
    const std::size_t n = (z1 - z0) * slice;
    buf->resize(n);
    for (std::size_t i = 0; i < n; ++i) (*buf)[i] = static_cast<F>(src[i]);  // exact
    if (in->write) in->write(z0, z1, buf->data());
  };
  s.finish = [in] {
    if (in->finish) in->finish();
  };
  s.abort = [in] {
    if (in->abort) in->abort();
  };
  return s;
}

template <class In>
run_result run_streamed(const run_options& opt, const io::volume_info& full_info, stream_set& s,
                        std::size_t budget) {
  std::vector<op_spec> chain = opt.ops;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (chain[i].kind == op_kind::crop && i > 0)
      throw usage_error("'" + chain[i].text +
                        "' must be the first op of a streamed run (raise --budget to run it in "
                        "memory)");
    if (chain[i].kind == op_kind::downsample && i + 1 < chain.size())
      throw usage_error("'" + chain[i].text +
                        "' must be the last op of a streamed run (raise --budget to run it in "
                        "memory)");
  }
  // Spacing and origin of the result (pure: every op says how it moves them).
  geometry g_final = geometry_of_info(full_info);
  for (const op_spec& op : opt.ops) g_final = result_geometry(op, g_final);

  // A leading crop: its z range is a window on the source (only those slices are read); its x/y
  // part stays in the chain.
  io::volume_info info = full_info;
  std::pair<std::size_t, std::size_t> zwin{0, full_info.extent.z};
  if (!chain.empty() && chain.front().kind == op_kind::crop) {
    const auto box = crop_box(chain.front(), full_info.extent);
    zwin = {box.first.z, box.second.z};
    info.extent.z = box.second.z - box.first.z;
    info.origin.z += static_cast<double>(box.first.z) * info.spacing.z;
    if (box.first.x == 0 && box.first.y == 0 && box.second.x == info.extent.x &&
        box.second.y == info.extent.y) {
      chain.erase(chain.begin());
    } else {
      chain.front().lo.z = 0;
      chain.front().hi.z = 0;
    }
  }
  std::optional<op_spec> last;
  if (!chain.empty() && is_terminal(chain.back())) {
    last = chain.back();
    chain.pop_back();
  }
  std::size_t n_norm = 0;
  for (const op_spec& op : chain) n_norm += op.kind == op_kind::normalize ? 1 : 0;
  if (!chain.empty() && chain.front().kind == op_kind::crop && (!last || n_norm > 0))
    throw usage_error("'" + chain.front().text +
                      "': a streamed run crops along x or y only when it ends in a projection "
                      "or downsample and has no --normalize (crop along z only, or raise "
                      "--budget)");

  const extent3 e = info.extent;
  const extent3 e_chain = result_extent(chain, e);
  const dtype in_t = info.type;
  const dtype chain_t = result_type(chain, in_t);
  const std::size_t halo = std::min(halo_of(chain), e.z);
  const std::size_t multiple = (last && last->kind == op_kind::downsample) ? last->size.z : 1;
  std::size_t fixed = 0;
  if (last) fixed = 2 * result_extent(*last, e_chain).voxels() * sizeof(double);
  std::size_t depth = opt.slab_depth;
  if (depth == 0) {
    depth = streamed_slab_depth(budget, e, in_t, last ? in_t : chain_t, chain, halo, fixed, 3,
                                multiple);
  } else {
    if (depth % multiple != 0)
      throw usage_error("--slab-depth " + std::to_string(depth) + " must be a multiple of " +
                        std::to_string(multiple) + " (the downsampling factor along z)");
    depth = std::min(depth, e.z);
  }

  run_result r;
  r.streamed = true;
  r.slab_depth = depth;
  r.halo = halo;
  r.budget = budget;

  // Passes that find the range of each --normalize input (one slab cannot know it).
  const std::size_t passes = n_norm + 1;
  std::size_t pass = 0;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (chain[i].kind != op_kind::normalize) continue;
    ++pass;
    const std::vector<op_spec> prefix(chain.begin(), chain.begin() + static_cast<long>(i));
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    with_out_type<In>(result_type(prefix, in_t), [&](auto tg) {
      using P = typename decltype(tg)::type;
      slab_sink<P> sink;
      sink.extent = e;
      sink.name = "the range of " + chain[i].text;
      sink.write = [&](std::size_t z0, std::size_t z1, const P* src) {
        const std::size_t n = (z1 - z0) * e.slice_voxels();
        for (std::size_t k = 0; k < n; ++k) {
          const double v = static_cast<double>(src[k]);
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
      };
      (void)stream_pass<In, P>(opt, info, prefix, nullptr, sink, depth, s,
                               opt.label + " pass " + std::to_string(pass) + "/" +
                                   std::to_string(passes) + " (range for " + chain[i].text + ")",
                               zwin);
    });
    if (!(lo <= hi)) lo = hi = 0;  // only NaN voxels
    chain[i].range_known = true;
    chain[i].known_min = lo;
    chain[i].known_max = hi;
  }
  ++pass;
  const std::string label =
      passes > 1 ? opt.label + " pass " + std::to_string(pass) + "/" + std::to_string(passes)
                 : opt.label;

  if (!last) {
    visit_dtype(chain_t, [&](auto tg) {
      using F = typename decltype(tg)::type;
      io::write_options wo;
      wo.spacing = g_final.spacing;
      wo.origin = g_final.origin;
      slab_sink<F> file = file_sink<F>(opt.output, e, wo);
      with_out_type<In>(chain_t, [&](auto to) {
        using Out = typename decltype(to)::type;
        slab_sink<Out> sink;
        if constexpr (std::is_same_v<Out, F>)
          sink = std::move(file);
        else
          sink = converting_sink<Out, F>(std::move(file));
        const stream_report rep =
            stream_pass<In, Out>(opt, info, chain, nullptr, sink, depth, s, label, zwin);
        r.slabs = rep.slabs;
      });
    });
    r.type = chain_t;
    r.extent = e;
    r.geo = g_final;
  } else {
    terminal_state term{*last, e_chain, std::nullopt};
    slab_sink<In> sink;  // the slabs themselves are not kept: only the accumulator
    sink.extent = e;
    sink.name = "(projection)";
    const stream_report rep =
        stream_pass<In, In>(opt, info, chain, &term, sink, depth, s, label, zwin);
    r.slabs = rep.slabs;
    any_volume res = visit_dtype(chain_t, [&](auto tg) {
      using T = typename decltype(tg)::type;
      return finish_terminal<T>(s, term);
    });
    std::visit(
        [&](auto& v) {
          set_geometry(v, g_final);
          r.extent = v.extent();
          r.geo = g_final;
          r.image = to_host(s, v);
        },
        res);
    r.type = type_of(res);
  }
  r.passes = passes;
  return r;
}

}  // namespace

run_result execute(const run_options& opt) {
  check_op_list(opt.ops);
  const io::volume_info info = probe_input(opt.input);
  const extent3 out_e = result_extent(opt.ops, info.extent);
  const std::size_t budget = opt.budget != 0 ? opt.budget : default_budget();
  const bool stream = opt.streaming == stream_choice::always ||
                      (opt.streaming == stream_choice::automatic &&
                       peak_device_bytes(opt.ops, info.extent, info.type) > budget);
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
  run_result r = visit_dtype(info.type, [&](auto tg) {
    using In = typename decltype(tg)::type;
    return run_streamed<In>(opt, info, s, budget);
  });
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

// --- statistics -----------------------------------------------------------------------------------

namespace {

template <class T>
value_stats stats_as(const input_spec& input, const io::volume_info& info, std::size_t budget,
                     std::size_t nstreams, progress_mode mode) {
  const extent3 e = info.extent;
  const std::size_t slice_bytes = e.slice_voxels() * sizeof(T);
  // The slab and the reduction's partials: about twice the slab; at most 256 MiB a slab, so that
  // the pinned read buffer stays small and a large file shows its progress.
  const std::size_t slab_bytes = std::min<std::size_t>(budget / 2, std::size_t{256} << 20);
  const std::size_t depth = std::max<std::size_t>(1, std::min(e.z, slab_bytes / slice_bytes));
  const std::size_t slabs = (e.z + depth - 1) / depth;
  stream_set s(std::max<std::size_t>(1, nstreams));
  host_volume<T> buf(extent3{e.x, e.y, depth});
  // The library's file source: memory-mapped raw data, or one gzip stream decoded once in all.
  const slab_source<T> source = make_source<T>(input, 0, e.z);
  progress_reporter bar("info", "slabs", slabs > 1 ? mode : progress_mode::off);
  value_stats r;
  double m2 = 0;
  r.min = std::numeric_limits<double>::infinity();
  r.max = -std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < slabs; ++k) {
    const std::size_t z0 = k * depth;
    const std::size_t d = std::min(depth, e.z - z0);
    const std::size_t count = d * e.slice_voxels();
    source.read(z0, z0 + d, buf.data());
    volume<T> dev(s, extent3{e.x, e.y, d});
    upload(s, buf.data(), count, dev);  // blocks until staged: buf is free again on return
    const volume_stats st = statistics(s, dev).get();
    // Chan et al.: merge (count, mean, M2) of the slabs.
    const double na = static_cast<double>(r.count);
    const double nb = static_cast<double>(st.count);
    const double n = na + nb;
    const double delta = st.mean - r.mean;
    const double m2b = st.variance * nb;
    r.mean = r.count == 0 ? st.mean : r.mean + delta * nb / n;
    m2 = r.count == 0 ? m2b : m2 + m2b + delta * delta * na * nb / n;
    r.count += st.count;
    r.min = std::min(r.min, st.min);
    r.max = std::max(r.max, st.max);
    bar.update(k + 1, slabs);
  }
  r.stddev = r.count > 0 ? std::sqrt(m2 / static_cast<double>(r.count)) : 0.0;
  r.slabs = slabs;
  return r;
}

}  // namespace

value_stats file_stats(const input_spec& input, const io::volume_info& info, std::size_t budget,
                       std::size_t streams, progress_mode progress) {
  return visit_dtype(info.type, [&](auto tg) {
    using T = typename decltype(tg)::type;
    return stats_as<T>(input, info, budget != 0 ? budget : default_budget(), streams, progress);
  });
}

}  // namespace vox::cli
