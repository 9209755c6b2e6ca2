/// @file graph.hpp
/// @brief Graph capture of what a stream set enqueues: vox::capture and vox::graph.
///
/// vox::capture runs `fn` once under cudaStreamCaptureModeGlobal: it forks every stream of the
/// set from stream 0 (the origin) by an event, calls fn, joins every stream back, and ends the
/// capture. Global mode rejects every call that could block the host or use the legacy default
/// stream, so a pipeline that captures is free of them by construction; a capture that hits one
/// throws vox::cuda_error naming the call. graph::launch replays the graph on the origin stream,
/// ordered after the earlier work on every volume the graph touches, and leaves every stream of
/// the set, and every such volume's ledger, ordered after the replay.
///
/// The ledger across a capture: nothing fn enqueues runs until a launch, and inside the graph all
/// work enqueued on the set before the capture counts as done (a launch is ordered after it). So
/// capture() first makes the origin stream wait on every stream of the set (and on the pending
/// work of the bound volumes on other streams), lets fn's ops wait only on each other (graph
/// edges), and afterwards points every ledger that fn's ops touched at one event recorded on the
/// origin after that join. A launch makes the origin wait on those ledgers' pending work, replays,
/// records one event, makes every stream of the set wait on it and points the ledgers at it.
///
/// Rules, because the graph holds raw pointers and the ledger state of the volumes it touched:
/// - fn enqueues work only through voxstream ops on `streams` (other streams do not join the
///   capture);
/// - every volume fn uses exists before the capture and outlives every launch of the graph: fn
///   must not create or destroy volumes (make temporaries beforehand and bind them);
/// - a volume with pending work on streams outside the set must be bound, or that work finished,
///   before the capture (waiting on it inside a capture is invalid in CUDA);
/// - the volumes passed to capture() after fn are bound: launch(streams, others...) with volumes
///   of the same types and extents re-runs fn under capture for them and updates the executable
///   graph in place (cudaGraphExecUpdate; a new instantiation only if the update is refused);
/// - capture and launch are not thread-safe with respect to other threads using the same volumes.
///
/// On the host backend there is nothing to capture: capture() stores fn and its bound volumes,
/// and launch() runs fn on them (work runs at once there), so the same code works on both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include <voxstream/core/extent.hpp>
#include <voxstream/exec/ledger.hpp>
#include <voxstream/exec/stream_set.hpp>

namespace vox {

namespace detail {
/// @brief Identity of a volume bound to a graph: its storage, ledger, extent and type.
struct bound_volume {
  const void* data{nullptr};
  exec::slice_ledger* ledger{nullptr};
  extent3 ext{};
  std::type_index type{typeid(void)};
};

template <class V>
bound_volume bind_volume(V& v) {
  return bound_volume{static_cast<const void*>(v.data()), v.empty() ? nullptr : &v.ledger(),
                      v.extent(), std::type_index(typeid(std::remove_cv_t<V>))};
}

template <class V>
void* erase_volume(V& v) noexcept {
  return const_cast<void*>(static_cast<const void*>(&v));
}

/// @brief fn, with the types of its bound volumes erased.
class graph_body {
 public:
  graph_body() = default;
  graph_body(const graph_body&) = delete;
  graph_body& operator=(const graph_body&) = delete;
  virtual ~graph_body() = default;
  /// @brief Calls fn(volumes...) with the volumes at `args` (one pointer per bound volume).
  virtual void run(void* const* args) = 0;
};

template <class Fn, class... V>
class graph_body_of final : public graph_body {
 public:
  explicit graph_body_of(Fn fn) : fn_(std::move(fn)) {}
  void run(void* const* args) override { run_(args, std::index_sequence_for<V...>{}); }

 private:
  template <std::size_t... I>
  void run_(void* const* args, std::index_sequence<I...>) {
    (void)args;
    fn_(*static_cast<V*>(args[I])...);
  }
  Fn fn_;
};
}  // namespace detail

/// @brief Options of vox::capture.
struct capture_options {
  /// On the CUDA backend, watch the runtime calls made during the capture (CUPTI callbacks, when
  /// no other CUPTI client holds them), so that a failed capture names the offending call.
  bool diagnose{true};
};

class graph;

namespace detail {
graph make_graph(stream_set& streams, const capture_options& opts, std::unique_ptr<graph_body> body,
                 std::vector<bound_volume> bound, std::vector<void*> args);
}

/// @brief An executable graph captured from a stream set (RAII over cudaGraph_t and
///        cudaGraphExec_t). Move-only.
class graph {
 public:
  /// @brief An empty graph; launch() rejects it.
  graph() noexcept;
  ~graph();
  graph(graph&&) noexcept;
  graph& operator=(graph&&) noexcept;
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;

  /// @brief Replays the graph on streams.stream(0), after the earlier work on every volume it
  ///        touches; afterwards every stream of `streams` and the ledgers of those volumes are
  ///        ordered after the replay. With volumes, they replace the bound ones (same count,
  ///        types and extents; vox::invalid_argument otherwise, before anything is enqueued): if
  ///        any differs from the bound one, fn is captured again for them and the executable graph
  ///        updated in place. Asynchronous.
  template <class... V>
  void launch(stream_set& streams, V&... volumes) {
    if constexpr (sizeof...(V) == 0) {
      launch_(streams, nullptr, nullptr);
    } else {
      const std::vector<detail::bound_volume> now{detail::bind_volume(volumes)...};
      void* const args[] = {detail::erase_volume(volumes)...};
      launch_(streams, &now, args);
    }
  }

  [[nodiscard]] bool empty() const noexcept { return impl_ == nullptr; }
  /// @brief Nodes of the captured graph (0 on the host backend).
  [[nodiscard]] std::size_t nodes() const;
  /// @brief Kernel nodes of the captured graph (0 on the host backend).
  [[nodiscard]] std::size_t kernel_nodes() const;
  /// @brief Launches that captured fn again because the bound volumes changed.
  [[nodiscard]] std::size_t recaptures() const noexcept;
  /// @brief Of those, the ones whose in-place update was refused and that instantiated anew.
  [[nodiscard]] std::size_t reinstantiations() const noexcept;
  /// @brief Ledgers of the volumes that the captured ops touched (CUDA backend; for tests).
  [[nodiscard]] std::vector<const exec::slice_ledger*> touched_ledgers() const;

  struct impl;  ///< internal

 private:
  friend graph detail::make_graph(stream_set&, const capture_options&,
                                  std::unique_ptr<detail::graph_body>,
                                  std::vector<detail::bound_volume>, std::vector<void*>);
  void launch_(stream_set& streams, const std::vector<detail::bound_volume>* now,
               void* const* args);
  std::unique_ptr<impl> impl_;
};

/// @brief Captures everything `fn(volumes...)` enqueues on `streams` into a graph (see the file
///        comment). On the CUDA backend fn runs once, under capture: nothing it enqueues runs
///        until graph::launch. Throws vox::cuda_error naming the call if fn made a synchronising
///        call or used the legacy default stream, and rethrows what fn threw otherwise; either
///        way nothing fn enqueued will run. Asynchronous: the host does not wait.
template <class Fn, class... V>
graph capture(stream_set& streams, const capture_options& opts, Fn&& fn, V&... volumes) {
  static_assert(std::is_invocable_v<std::decay_t<Fn>&, V&...>,
                "vox::capture: fn must be callable with the bound volumes, fn(volumes...)");
  auto body = std::make_unique<detail::graph_body_of<std::decay_t<Fn>, V...>>(std::forward<Fn>(fn));
  return detail::make_graph(streams, opts, std::move(body),
                            std::vector<detail::bound_volume>{detail::bind_volume(volumes)...},
                            std::vector<void*>{detail::erase_volume(volumes)...});
}

/// @brief vox::capture with the default options.
template <class Fn, class... V,
          class = std::enable_if_t<!std::is_same_v<std::decay_t<Fn>, capture_options>>>
graph capture(stream_set& streams, Fn&& fn, V&... volumes) {
  return capture(streams, capture_options{}, std::forward<Fn>(fn), volumes...);
}

}  // namespace vox
