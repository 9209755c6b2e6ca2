// Running ops through the op table (op_dispatch.hpp).
#include "op_dispatch.hpp"

namespace vox::cli {

any_volume apply_op(stream_set& s, const op_spec& op, volume_ref in) {
  const op_entry& e = entry_of(op.kind);
  const geometry g = visit_volume(
      in, [&](const auto& v) { return e.geo(op, geometry{v.spacing(), v.origin()}); });
  any_volume out = e.run(s, op, in);
  std::visit(
      [&](auto& v) {
        v.set_spacing(g.spacing);
        v.set_origin(g.origin);
      },
      out);
  return out;
}

}  // namespace vox::cli
