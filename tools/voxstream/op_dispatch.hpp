/// @file op_dispatch.hpp
/// @brief Running ops through the op table (ops_table.hpp): one op, or a chain of them on a
///        volume. Asynchronous.
#pragma once

#include <cstddef>
#include <utility>
#include <variant>
#include <vector>

#include "ops_table.hpp"

namespace vox::cli {

/// @brief Applies `op` to `in` with its table entry's runner; the result has the spacing and
///        origin that the entry's geometry rule gives from in's. Asynchronous (arguments are
///        checked before anything is enqueued).
[[nodiscard]] any_volume apply_op(stream_set& s, const op_spec& op, volume_ref in);

/// @brief Applies `ops` to `in` in order and calls `f(result)` with the last result as a
///        `const volume<T>&` (with `in` itself when `ops` is empty); each op's input is freed once
///        the next one has run. Asynchronous.
template <class F>
void with_chain_result(stream_set& s, const std::vector<op_spec>& ops, volume_ref in, F&& f) {
  if (ops.empty()) {
    visit_volume(in, [&](const auto& v) { f(v); });
    return;
  }
  any_volume cur = apply_op(s, ops.front(), in);
  for (std::size_t i = 1; i < ops.size(); ++i) {
    any_volume next = apply_op(s, ops[i], ref_of(cur));
    cur = std::move(next);
  }
  std::visit([&](const auto& v) { f(v); }, cur);
}

}  // namespace vox::cli
