// Streamed runs of `run` (engine_detail.hpp): the op list slab by slab through
// vox::stream_process. How each op streams is its op table entry's stream_role: per slab, after
// a pass that finds its input's range, as a window on the file, or as a terminal accumulator;
// ops that need the whole volume are refused (execute() refuses them before any work).
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/geometry.hpp>

#include "engine_detail.hpp"
#include "op_dispatch.hpp"

namespace vox::cli {

namespace {

stream_role role_of(const op_spec& op) { return entry_of(op.kind).role; }

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
  const terminal_hooks* hooks = term == nullptr ? nullptr : entry_of(term->op.kind).terminal;
  const slab_pipeline_at<In, Out> pipeline = [&](stream_set& ss, const volume<In>& in,
                                                 volume<Out>& out, const slab_position& p) {
    with_chain_result(ss, chain, ref_of(in), [&](const auto& res) {
      using T = voxel_of_t<decltype(res)>;
      if (hooks == nullptr) {
        if constexpr (std::is_same_v<T, Out>)
          copy(ss, res, out);
        else
          convert<T, Out>(ss, res, out);
        return;
      }
      const std::size_t depth_here = p.out.depth();
      if (p.halo_lo() == 0 && res.extent().z == depth_here) {
        hooks->add_slab(ss, *term, ref_of(res), p.out.z0);
      } else {
        volume<T> interior(ss, extent3{res.extent().x, res.extent().y, depth_here});
        crop(ss, res, interior, extent3{0, 0, p.halo_lo()});
        hooks->add_slab(ss, *term, ref_of(interior), p.out.z0);
      }
    });
  };
  progress_reporter bar(label, "slabs", opt.progress);
  stream_options so;
  so.device_budget_bytes = 0;  // the depth was fitted to the budget already
  so.ramp = hooks == nullptr || hooks->ramp;
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
run_result run_streamed_as(const run_options& opt, const io::volume_info& full_info,
                           stream_set& s, std::size_t budget) {
  std::vector<op_spec> chain = opt.ops;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (role_of(chain[i]) == stream_role::whole_volume)  // execute() says so first
      throw usage_error("'" + chain[i].text +
                        "' needs the whole volume in device memory and cannot be streamed");
    if (role_of(chain[i]) == stream_role::window && i > 0)
      throw usage_error("'" + chain[i].text +
                        "' must be the first op of a streamed run (raise --budget to run it in "
                        "memory)");
    if (role_of(chain[i]) == stream_role::terminal && i + 1 < chain.size())
      throw usage_error("'" + chain[i].text +
                        "' must be the last op of a streamed run (raise --budget to run it in "
                        "memory)");
  }
  // Spacing and origin of the result (pure: every op says how it moves them).
  geometry g_final = geometry_of_info(full_info);
  for (const op_spec& op : opt.ops) g_final = result_geometry(op, g_final);

  // A leading window (crop): its z range is a window on the source (only those slices are
  // read); the rest of it (x/y) stays in the chain.
  io::volume_info info = full_info;
  std::pair<std::size_t, std::size_t> zwin{0, full_info.extent.z};
  if (!chain.empty() && role_of(chain.front()) == stream_role::window) {
    const window_hooks& w = *entry_of(chain.front().kind).window;
    zwin = w.z_range(chain.front(), full_info.extent);
    info.extent.z = zwin.second - zwin.first;
    info.origin.z += static_cast<double>(zwin.first) * info.spacing.z;
    const std::optional<op_spec> rest = w.rest(chain.front(), full_info.extent);
    if (rest)
      chain.front() = *rest;
    else
      chain.erase(chain.begin());
  }
  std::optional<op_spec> last;
  if (!chain.empty() && is_terminal(chain.back())) {
    last = chain.back();
    chain.pop_back();
  }
  std::size_t n_range = 0;
  for (const op_spec& op : chain) n_range += role_of(op) == stream_role::input_range ? 1 : 0;
  if (!chain.empty() && role_of(chain.front()) == stream_role::window && (!last || n_range > 0))
    throw usage_error("'" + chain.front().text +
                      "': a streamed run crops along x or y only when it ends in a projection "
                      "or downsample and has no --normalize (crop along z only, or raise "
                      "--budget)");

  const extent3 e = info.extent;
  const extent3 e_chain = result_extent(chain, e);
  const dtype in_t = info.type;
  const dtype chain_t = result_type(chain, in_t);
  const std::size_t halo = std::min(halo_of(chain), e.z);
  const terminal_hooks* hooks = last ? entry_of(last->kind).terminal : nullptr;
  const std::size_t multiple = hooks != nullptr ? hooks->slab_multiple(*last) : 1;
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

  // Passes that find the range of each input_range op's input (one slab cannot know it).
  const std::size_t passes = n_range + 1;
  std::size_t pass = 0;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (role_of(chain[i]) != stream_role::input_range) continue;
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
    terminal_state term{*last, e_chain, chain_t, std::nullopt};
    slab_sink<In> sink;  // the slabs themselves are not kept: only the accumulator
    sink.extent = e;
    sink.name = "(projection)";
    const stream_report rep =
        stream_pass<In, In>(opt, info, chain, &term, sink, depth, s, label, zwin);
    r.slabs = rep.slabs;
    VOX_EXPECTS(term.acc.has_value(), "run", "internal: no slab reached the projection");
    any_volume res = hooks->finish(s, term);
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

run_result run_streamed(const run_options& opt, const io::volume_info& info, stream_set& s,
                        std::size_t budget) {
  return visit_dtype(info.type, [&](auto tg) {
    using In = typename decltype(tg)::type;
    return run_streamed_as<In>(opt, info, s, budget);
  });
}

}  // namespace vox::cli
