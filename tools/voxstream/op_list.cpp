// The op list of `run` (op_list.hpp): what it derives from the op table (ops_table.hpp), entry
// by entry; no op is named here.
#include "op_list.hpp"

#include <algorithm>
#include <string>

#include "../../src/io/detail/text.hpp"
#include "ops_table.hpp"

namespace vox::cli {

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const op_entry& e : op_table()) n.emplace_back(e.name);
    return n;
  }();
  return names;
}

bool op_is_flag(std::string_view name) {
  const op_entry* e = find_op(name);
  return e != nullptr && e->placeholder[0] == '\0';
}

bool op_value_optional(std::string_view name) {
  const op_entry* e = find_op(name);
  return e != nullptr && e->placeholder[0] == '[';
}

std::pair<std::string, std::string> op_help(std::string_view name) {
  const op_entry* e = find_op(name);
  if (e == nullptr) return {"", ""};
  return {e->placeholder, e->help};
}

op_spec parse_op(std::string_view name, std::string_view value) {
  const op_entry* e = find_op(name);
  if (e == nullptr) throw usage_error("unknown op '--" + std::string(name) + "'");
  op_spec op;
  op.kind = e->kind;
  const std::string what = "--" + std::string(name);
  op.text = value.empty() ? what : what + " " + std::string(value);
  if (e->placeholder[0] == '\0') {
    if (!value.empty()) bad_value(what, value, "takes no value");
    return op;
  }
  if (io::detail::trim(value).empty()) {
    if (e->placeholder[0] != '[') bad_value(what, value, "needs a value");
    value = std::string_view();  // left out: the parser sets the default
  }
  e->parse(op, value, what);
  return op;
}

std::vector<op_spec> parse_ops(const std::vector<std::pair<std::string, std::string>>& args) {
  std::vector<op_spec> ops;
  ops.reserve(args.size());
  for (const auto& a : args) ops.push_back(parse_op(a.first, a.second));
  return ops;
}

bool is_projection(const op_spec& op) noexcept { return entry_of(op.kind).last; }

bool is_terminal(const op_spec& op) noexcept {
  return entry_of(op.kind).role == stream_role::terminal;
}

bool needs_whole_volume(const op_spec& op) noexcept {
  return entry_of(op.kind).role == stream_role::whole_volume;
}

void check_op_list(const std::vector<op_spec>& ops) {
  for (std::size_t i = 0; i + 1 < ops.size(); ++i)
    if (is_projection(ops[i]))
      throw usage_error("'" + ops[i].text + "' must be the last op (it is followed by '" +
                        ops[i + 1].text + "')");
}

std::size_t z_radius(const op_spec& op) noexcept { return entry_of(op.kind).z_radius(op); }

std::size_t halo_of(const std::vector<op_spec>& ops) noexcept {
  std::size_t h = 0;
  for (const op_spec& op : ops) h += z_radius(op);
  return h;
}

dtype result_type(const op_spec& op, dtype in) noexcept { return entry_of(op.kind).type(op, in); }

dtype result_type(const std::vector<op_spec>& ops, dtype in) noexcept {
  for (const op_spec& op : ops) in = result_type(op, in);
  return in;
}

std::pair<extent3, extent3> crop_box(const op_spec& op, extent3 in) {
  const extent3 hi{op.hi.x == 0 ? in.x : op.hi.x, op.hi.y == 0 ? in.y : op.hi.y,
                   op.hi.z == 0 ? in.z : op.hi.z};
  if (hi.x > in.x || hi.y > in.y || hi.z > in.z || op.lo.x >= hi.x || op.lo.y >= hi.y ||
      op.lo.z >= hi.z)
    throw usage_error("'" + op.text + "': the box is empty or leaves the extent " + in.str());
  return {op.lo, hi};
}

op_spec crop_along(projection_axis axis, std::size_t a, std::size_t b) {
  op_spec op;
  op.kind = op_kind::crop;
  const std::string r = std::to_string(a) + ":" + std::to_string(b);
  switch (axis) {
    case projection_axis::x:
      op.lo.x = a;
      op.hi.x = b;
      op.text = "--slab " + r + " (along x)";
      break;
    case projection_axis::y:
      op.lo.y = a;
      op.hi.y = b;
      op.text = "--slab " + r + " (along y)";
      break;
    case projection_axis::z:
    default:
      op.lo.z = a;
      op.hi.z = b;
      op.text = "--slab " + r + " (along z)";
      break;
  }
  if (b <= a) throw usage_error("'" + op.text + "': an empty range");
  return op;
}

extent3 result_extent(const op_spec& op, extent3 in) { return entry_of(op.kind).extent(op, in); }

extent3 result_extent(const std::vector<op_spec>& ops, extent3 in) {
  for (const op_spec& op : ops) in = result_extent(op, in);
  return in;
}

geometry result_geometry(const op_spec& op, const geometry& in) noexcept {
  return entry_of(op.kind).geo(op, in);
}

std::size_t scratch_bytes(const op_spec& op, extent3 e, dtype in) noexcept {
  return entry_of(op.kind).scratch(op, e, in);
}

std::size_t peak_device_bytes(const std::vector<op_spec>& ops, extent3 e, dtype in) {
  std::size_t peak = e.voxels() * dtype_size(in);
  for (const op_spec& op : ops) {
    const dtype t = result_type(op, in);
    const extent3 o = result_extent(op, e);
    const std::size_t need =
        e.voxels() * dtype_size(in) + o.voxels() * dtype_size(t) + scratch_bytes(op, e, in);
    peak = std::max(peak, need);
    e = o;
    in = t;
  }
  return peak;
}

std::size_t streamed_slab_depth(std::size_t budget, extent3 e, dtype in, dtype out,
                                const std::vector<op_spec>& chain, std::size_t halo,
                                std::size_t fixed, std::size_t buffers, std::size_t multiple) {
  if (multiple == 0) multiple = 1;
  const extent3 slice{e.x, e.y, 1};
  const std::size_t per_slice = buffers * slice.voxels() * (dtype_size(in) + dtype_size(out)) +
                                peak_device_bytes(chain, slice, in);
  const std::size_t need_min = fixed + (multiple + 2 * halo) * per_slice;
  if (budget < need_min)
    throw usage_error("--budget " + format_bytes(budget) + " is too small to stream a volume of " +
                      e.str() + ": a slab of " + std::to_string(multiple) +
                      " slice(s) with a halo of " + std::to_string(halo) + " needs about " +
                      format_bytes(need_min));
  std::size_t depth = (budget - fixed) / per_slice - 2 * halo;
  depth = std::min(depth, e.z);
  depth -= depth % multiple;
  return std::max(depth, multiple);
}

}  // namespace vox::cli
