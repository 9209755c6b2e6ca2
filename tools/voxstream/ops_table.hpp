/// @file ops_table.hpp
/// @brief The `voxstream` tool's ops as one table (ops_table.cpp): each op's option name, help,
///        argument parser, result rules (voxel type, extent, geometry, scratch memory), z halo,
///        part in a streamed run and runner, in one entry. The rest of the tool asks the table
///        (op_list.hpp, op_dispatch.hpp) and never names an op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <voxstream/core/dtype.hpp>
#include <voxstream/core/extent.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/volume.hpp>

#include "op_list.hpp"

namespace vox::cli {

/// @brief A device volume of any voxel type; index() == static_cast<size_t>(dtype).
using any_volume = std::variant<volume<std::uint8_t>, volume<std::uint16_t>, volume<std::int16_t>,
                                volume<std::int32_t>, volume<float>, volume<double>>;

/// @brief A device volume of any voxel type, by reference (what runners read: a slab that
///        stream_process owns, or an op's result); index() == static_cast<size_t>(dtype).
using volume_ref =
    std::variant<const volume<std::uint8_t>*, const volume<std::uint16_t>*,
                 const volume<std::int16_t>*, const volume<std::int32_t>*, const volume<float>*,
                 const volume<double>*>;

/// @brief The voxel type of `v`.
[[nodiscard]] inline dtype type_of(const any_volume& v) noexcept {
  return static_cast<dtype>(v.index());
}
/// @brief The voxel type of `v`.
[[nodiscard]] inline dtype type_of(const volume_ref& v) noexcept {
  return static_cast<dtype>(v.index());
}

/// @brief `v` by reference.
template <class T>
[[nodiscard]] volume_ref ref_of(const volume<T>& v) noexcept {
  return volume_ref(&v);
}
/// @brief The volume that `v` holds, by reference.
[[nodiscard]] inline volume_ref ref_of(const any_volume& v) noexcept {
  return std::visit([](const auto& x) { return volume_ref(&x); }, v);
}

/// @brief The voxel type of a `volume<T>` (any cv-ref qualification).
template <class V>
using voxel_of_t = typename std::decay_t<V>::value_type;

/// @brief Calls `f(v)` with `v` the `const volume<T>&` that `in` refers to, T found with
///        vox::visit_dtype, and returns what it returns (the same type for every T).
template <class F>
decltype(auto) visit_volume(const volume_ref& in, F&& f) {
  return visit_dtype(type_of(in), [&](auto tag) -> decltype(auto) {
    using T = typename decltype(tag)::type;
    return f(*std::get<const volume<T>*>(in));
  });
}

/// @brief The float voxel type that real-valued ops produce from `in`: float64 for float64
///        input, float32 otherwise (vox::filter_real_t).
[[nodiscard]] inline dtype real_of(dtype in) noexcept {
  return in == dtype::float64 ? dtype::float64 : dtype::float32;
}

/// @brief How an op takes part in a streamed run (vox::stream_process, slab by slab).
enum class stream_role : std::uint8_t {
  per_slab,     ///< runs on each slab, which carries z_radius() halo slices on either side
  input_range,  ///< per slab, given the min and max of its input over the whole volume
                ///< (op_spec::known_min and known_max), found by one more pass over the input
  window,       ///< keeps a box (window_hooks): must be first; its z range is read from the
                ///< file, the rest of it runs per slab
  terminal,     ///< reduces the slabs into an accumulator (terminal_hooks): must be last
  whole_volume,  ///< needs the whole volume at once (its result is global: labels, distances,
                 ///< holes): never streamed; a run with one is in memory or refused
};

/// @brief The accumulator of a terminal op that ends a streamed run.
struct terminal_state {
  op_spec op;
  extent3 full{};             ///< extent of the op's input (the whole volume after the chain)
  dtype in{dtype::uint8};     ///< voxel type of that input
  std::optional<any_volume> acc;  ///< made by the first slab
};

/// @brief What a stream_role::terminal op does in a streamed run.
struct terminal_hooks {
  /// Whether stream_process may make the first and last slabs thinner (stream_options::ramp).
  bool ramp;
  /// Every slab's depth is a multiple of this many slices.
  std::size_t (*slab_multiple)(const op_spec& op);
  /// Applies the op to `interior` (slices [z0, z0 + depth) of its input, without halo) and
  /// combines the result into `t.acc`. Asynchronous.
  void (*add_slab)(stream_set& s, terminal_state& t, volume_ref interior, std::size_t z0);
  /// The op's result, of its result type, from `t.acc` (which the slabs have made). Asynchronous.
  any_volume (*finish)(stream_set& s, terminal_state& t);
};

/// @brief What a stream_role::window op does in a streamed run.
struct window_hooks {
  /// The slices [first, second) of an input of extent `e` that the op keeps. Throws usage_error.
  std::pair<std::size_t, std::size_t> (*z_range)(const op_spec& op, extent3 e);
  /// What is left to run on each slab once only those slices are read (nullopt: nothing).
  std::optional<op_spec> (*rest)(const op_spec& op, extent3 e);
};

/// @brief The result extent of ops that keep it.
[[nodiscard]] inline extent3 same_extent(const op_spec&, extent3 in) { return in; }
/// @brief The result spacing and origin of ops that keep them.
[[nodiscard]] inline geometry same_geometry(const op_spec&, const geometry& in) noexcept {
  return in;
}
/// @brief The scratch bytes of ops that allocate none.
[[nodiscard]] inline std::size_t no_scratch(const op_spec&, extent3, dtype) noexcept { return 0; }
/// @brief The z radius of ops that read no z context (voxelwise ops).
[[nodiscard]] inline std::size_t no_halo(const op_spec&) noexcept { return 0; }

/// @brief One op of the table: all that the tool knows of it.
struct op_entry {
  op_kind kind;
  const char* name;         ///< the option, without "--"
  /// Its value in --help ("SIGMA"); empty for a flag; in brackets ("[CONN]") for a value that
  /// may be left out (--label, --label=26): `parse` then gets an empty value and sets the default.
  const char* placeholder;
  const char* help;         ///< its --help text
  /// Reads the option's value into `op` (kind and text are set already); throws usage_error
  /// naming `what` ("--gaussian"). Not called for a flag; called with an empty value when an
  /// optional value was left out.
  void (*parse)(op_spec& op, std::string_view value, const std::string& what);
  /// Voxel type of the result for input voxels of type `in`.
  dtype (*type)(const op_spec& op, dtype in);
  /// Slices of z context read on each side of a voxel: the halo a slab needs.
  std::size_t (*z_radius)(const op_spec& op);
  /// Enqueues the op on `in` and returns its result (spacing and origin set by the caller, from
  /// `geo`). Checks its arguments before enqueuing anything. Asynchronous, except that the ops
  /// on components (keep-largest, remove-small) wait for the number of labels, which the
  /// library takes as a host number.
  any_volume (*run)(stream_set& s, const op_spec& op, volume_ref in);
  /// Extent of the result (throws usage_error when the op does not fit `in`).
  extent3 (*extent)(const op_spec& op, extent3 in) = same_extent;
  /// Spacing and origin of the result.
  geometry (*geo)(const op_spec& op, const geometry& in) = same_geometry;
  /// Device bytes the op allocates besides its input and output, on a volume of extent `e`.
  std::size_t (*scratch)(const op_spec& op, extent3 e, dtype in) = no_scratch;
  /// Must be the last op of any run (its result is 2D).
  bool last = false;
  stream_role role = stream_role::per_slab;
  const terminal_hooks* terminal = nullptr;  ///< for stream_role::terminal
  const window_hooks* window = nullptr;      ///< for stream_role::window
};

/// @brief Every op, in op_kind order (the order of `run --help`).
[[nodiscard]] const std::vector<op_entry>& op_table();
/// @brief The entry of option `name` (without "--"); nullptr when there is none.
[[nodiscard]] const op_entry* find_op(std::string_view name);
/// @brief The entry of `kind`.
[[nodiscard]] const op_entry& entry_of(op_kind kind);

}  // namespace vox::cli
