// In-memory runs of `run` (engine_detail.hpp): the whole volume on the device, each op once.
#include <type_traits>
#include <utility>
#include <variant>

#include "engine_detail.hpp"
#include "op_dispatch.hpp"

namespace vox::cli {

namespace {

template <class V>
struct host_voxel;
template <class T>
struct host_voxel<host_volume<T>> {
  using type = T;
};

}  // namespace

io::any_host_volume read_input(const input_spec& in, const io::volume_info& info) {
  if (!in.raw) return io::read_any(in.path);
  return visit_dtype(info.type, [&](auto t) -> io::any_host_volume {
    using T = typename decltype(t)::type;
    host_volume<T> h;
    (void)io::read_raw<T>(in.path, *in.raw, h);
    return io::any_host_volume(std::move(h));
  });
}

any_volume upload_input(stream_set& s, const io::any_host_volume& host,
                        const io::volume_info& info) {
  return std::visit(
      [&](const auto& h) -> any_volume {
        using T = typename host_voxel<std::decay_t<decltype(h)>>::type;
        volume<T> v(s, h.extent());
        upload(s, h, v);
        set_geometry(v, geometry_of_info(info));
        return any_volume(std::move(v));
      },
      host);
}

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
  any_volume cur = upload_input(s, host, info);
  bar.update(++done, steps);
  for (const op_spec& op : opt.ops) {
    any_volume next = apply_op(s, op, ref_of(cur));
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

}  // namespace vox::cli
