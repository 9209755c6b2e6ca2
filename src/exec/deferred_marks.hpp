#pragma once
// run_op's view of a stream's pending deferred mark (see exec::defer_mark): whether the next op
// on the stream must record it first, or may forget it. Internal to the exec layer.

#include <memory>

#include <voxstream/exec/ledger.hpp>

namespace vox::exec {

/// @brief The stream's pending deferred mark (made by defer_mark, not recorded yet), or null.
///        Thread-safe.
std::shared_ptr<pooled_event> pending_deferred(stream_state& st);

/// @brief Forgets `e`, if it is still the stream's pending deferred mark, without recording it:
///        for a caller that knows nothing will need it at its place on the stream (run_op, when
///        its own ledger updates replace every holder). Should something still ask for its
///        value() later, the record is made then, after the newer work: a wait on more than
///        the op, never on less. Thread-safe.
void drop_deferred(stream_state& st, const pooled_event* e);

}  // namespace vox::exec
