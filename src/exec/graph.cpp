#include <voxstream/exec/graph.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/stream.hpp>

#include "../detail/cuda_check.hpp"
#include "capture_flag.hpp"
#include "capture_watch.hpp"

namespace vox {

// ============================================================================ capture watch

namespace {
std::atomic<exec::detail::capture_watch_factory> installed_capture_watch{nullptr};
}  // namespace

void exec::detail::set_capture_watch(capture_watch_factory f) noexcept {
  installed_capture_watch.store(f, std::memory_order_release);
}

exec::detail::capture_watch_factory exec::detail::capture_watch() noexcept {
  return installed_capture_watch.load(std::memory_order_acquire);
}

// ============================================================================ graph

struct graph::impl {
  std::unique_ptr<detail::graph_body> body;
  std::vector<detail::bound_volume> bound;
  std::vector<void*> args;  // the bound volumes, as fn takes them
  capture_options opts;
  std::vector<exec::slice_ledger*> touched;  // ledgers, existing before capture, that fn touched
  std::size_t recaptures{0};
  std::size_t reinstantiations{0};
#if VOX_BACKEND_CUDA
  // The event recorded after every replay, reused: entries that still hold it from the last
  // replay only need their sequence number moved on (no reference counting per slice).
  std::shared_ptr<exec::pooled_event> after;
  std::shared_ptr<exec::stream_state> after_origin;  // the stream `after` is recorded on
  cudaGraph_t graph{nullptr};
  cudaGraphExec_t exec{nullptr};
  ~impl() {
    if (exec != nullptr) VOX_CUDA_LOG(cudaGraphExecDestroy(exec), "graph::~graph");
    if (graph != nullptr) VOX_CUDA_LOG(cudaGraphDestroy(graph), "graph::~graph");
  }
#endif
};

namespace {

void check_binding(const std::vector<detail::bound_volume>& was,
                   const std::vector<detail::bound_volume>& now) {
  const char* op = "graph::launch";
  VOX_EXPECTS(now.size() == was.size(), op,
              "the graph was captured with " + std::to_string(was.size()) +
                  " bound volume(s), got " + std::to_string(now.size()));
  for (std::size_t i = 0; i < now.size(); ++i) {
    const std::string arg = "volume argument " + std::to_string(i);
    VOX_EXPECTS(now[i].type == was[i].type, op, arg + " is not of the type it had at capture");
    VOX_EXPECTS(now[i].ledger != nullptr, op, arg + " is empty");
    VOX_EXPECTS(now[i].ext == was[i].ext, op,
                arg + " has extent " + now[i].ext.str() + " but the graph was captured for " +
                    was[i].ext.str());
  }
}

bool same_binding(const std::vector<detail::bound_volume>& a,
                  const std::vector<detail::bound_volume>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].data != b[i].data || a[i].ledger != b[i].ledger) return false;
  return true;
}

#if VOX_BACKEND_CUDA
// ---------------------------------------------------------------------------- CUDA capture

// The capture watch that profile installed (capture_watch.hpp), if any: the first call that
// failed with a capture error, and the first call that synchronises or uses a default stream.
class capture_diagnoser {
 public:
  explicit capture_diagnoser(bool enabled) {
    if (!enabled) return;
    const exec::detail::capture_watch_factory make = exec::detail::capture_watch();
    if (make == nullptr) return;
    try {
      watch_ = make();
    } catch (const std::exception& ex) {
      unavailable_ = ex.what();
    }
  }

  void stop() noexcept {
    if (watch_ != nullptr) watch_->stop();
  }

  [[nodiscard]] bool watched() const noexcept { return watch_ != nullptr && watch_->watched(); }
  [[nodiscard]] const std::string& unavailable() const noexcept {
    return watch_ != nullptr ? watch_->unavailable() : unavailable_;
  }
  [[nodiscard]] const std::string& offender() const noexcept {
    return watch_ != nullptr ? watch_->offender() : none_;
  }
  [[nodiscard]] const std::string& failing() const noexcept {
    return watch_ != nullptr ? watch_->failing() : none_;
  }
  [[nodiscard]] int failing_error() const noexcept {
    return watch_ != nullptr ? watch_->failing_error() : 0;
  }

 private:
  std::unique_ptr<exec::detail::capture_watcher> watch_;
  std::string unavailable_;
  std::string none_;
};

// Watches run_op during a capture, on the capturing thread: which ledgers fn's ops on the set
// touched. Before the capture, every stream of the set (and every other stream with marks in a
// bound volume's ledger) counts the events recorded so far as complete (stream_state::completed
// = recorded), so that run_op waits only on events recorded inside the capture: they become
// graph edges, while waiting on an event recorded outside a capture is invalid in a capture.
// This is sound because capture_graph first joins all that work into the origin stream, and a
// launch of the graph on the origin comes after it. The streams' `completed` is restored after
// the capture.
class capture_session final : public exec::op_observer {
 public:
  capture_session(const stream_set& set, const std::vector<detail::bound_volume>& bound)
      : thread_(std::this_thread::get_id()) {
    for (std::size_t i = 0; i < set.size(); ++i) {
      handles_.push_back(set.state(i)->handle);
      assume_complete(set.state(i));
    }
    for (const auto& b : bound) {
      if (b.ledger == nullptr) continue;
      for (const auto& run : b.ledger->runs()) {
        const exec::slice_entry& e = run.entry;
        if (e.writer.valid()) assume_complete(e.writer.stream);
        for (const auto& r : e.readers)
          if (r.valid()) assume_complete(r.stream);
      }
    }
  }

  void slab_begin(const char*, std::size_t, stream_view s, const slab&) override {
    if (std::this_thread::get_id() != thread_) return;
    on_set_ = std::find(handles_.begin(), handles_.end(), s.value()) != handles_.end();
  }

  void ledger_updated(exec::slice_ledger& ledger) override {
    if (std::this_thread::get_id() != thread_ || !on_set_) return;
    try {
      if (std::find(touched_.begin(), touched_.end(), &ledger) == touched_.end())
        touched_.push_back(&ledger);
    } catch (...) {
      failed_ = true;
    }
  }

  void restore() noexcept {
    for (auto& [st, completed] : saved_completed_) st->completed = completed;
    saved_completed_.clear();
  }

  [[nodiscard]] const std::vector<exec::slice_ledger*>& touched() const noexcept {
    return touched_;
  }
  [[nodiscard]] bool failed() const noexcept { return failed_; }

 private:
  void assume_complete(const std::shared_ptr<exec::stream_state>& st) {
    for (const auto& s : saved_completed_)
      if (s.first == st) return;
    saved_completed_.emplace_back(st, st->completed);
    st->completed = std::max(st->completed, st->recorded);
  }

  std::thread::id thread_;
  std::vector<native_stream> handles_;
  std::vector<std::pair<std::shared_ptr<exec::stream_state>, std::uint64_t>> saved_completed_;
  std::vector<exec::slice_ledger*> touched_;
  bool on_set_{false};
  bool failed_{false};
};

// Makes the origin wait on every pending mark of `ledgers` (latest per stream) not on itself.
// Scans the entries in place: no marks are copied.
void join_ledgers(const std::vector<exec::slice_ledger*>& ledgers,
                  const std::shared_ptr<exec::stream_state>& origin, const char* op) {
  std::vector<const exec::mark*> needed;
  auto consider = [&](const exec::mark& m) {
    if (!m.valid() || m.stream == origin || m.seq <= exec::completed_seq(*m.stream)) return;
    for (auto& n : needed) {
      if (n->stream == m.stream) {
        if (n->seq < m.seq) n = &m;
        return;
      }
    }
    needed.push_back(&m);
  };
  for (const exec::slice_ledger* l : ledgers) {
    for (const auto& run : l->runs()) {
      consider(run.entry.writer);
      for (const auto& r : run.entry.readers) consider(r);
    }
  }
  for (const exec::mark* m : needed)
    detail::stream_wait_event(origin->handle, m->event->value(), op);
}

// Ends every capture left open on the set's streams after a failure (normally none).
void end_leftover_captures(const stream_set& set) noexcept {
  for (std::size_t i = 0; i < set.size(); ++i) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(set.state(i)->handle, &st) != cudaSuccess) continue;
    if (st == cudaStreamCaptureStatusNone) continue;
    cudaGraph_t g = nullptr;
    (void)cudaStreamEndCapture(set.state(i)->handle, &g);
    if (g != nullptr) (void)cudaGraphDestroy(g);
  }
  (void)cudaGetLastError();  // capture errors must not surface in later launch checks
}

std::string error_name(int e) {
  return std::string(cudaGetErrorName(static_cast<cudaError_t>(e))) + " (" +
         cudaGetErrorString(static_cast<cudaError_t>(e)) + ")";
}

// Runs body(args) under a global-mode capture forked from and joined to streams.stream(0).
// Returns the graph and the ledgers it touched, which afterwards point at one event on the
// origin after all work enqueued on the set before the capture. Throws with nothing left
// capturing and the ledgers equally consistent.
cudaGraph_t capture_graph(stream_set& set, detail::graph_body& body, void* const* args,
                          const capture_options& opts,
                          const std::vector<detail::bound_volume>& bound,
                          std::vector<exec::slice_ledger*>& touched) {
  const char* op = "capture";
  const auto& origin = set.state(0);
  for (std::size_t i = 0; i < set.size(); ++i) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    VOX_CUDA_TRY(cudaStreamIsCapturing(set.state(i)->handle, &st), op);
    VOX_EXPECTS(st == cudaStreamCaptureStatusNone, op,
                "stream " + std::to_string(i) + " of the set is already being captured");
  }

  // 1. Outside the capture: the origin waits on all work enqueued so far on the set, and on the
  //    bound volumes' pending work elsewhere. A launch on the origin comes after all of it.
  for (std::size_t i = 1; i < set.size(); ++i) {
    const exec::mark m = exec::record_mark(set.state(i), op);
    detail::stream_wait_event(origin->handle, m.event->value(), op);
  }
  {
    std::vector<exec::slice_ledger*> bound_ledgers;
    for (const auto& b : bound)
      if (b.ledger != nullptr) bound_ledgers.push_back(b.ledger);
    join_ledgers(bound_ledgers, origin, op);
  }

  // 2. The capture.
  capture_diagnoser diag(opts.diagnose);
  capture_session session(set, bound);
  std::vector<std::shared_ptr<exec::pooled_event>> events;  // alive until the capture ends
  std::exception_ptr thrown;
  bool began = false;
  try {
    exec::add_observer(&session);
  } catch (...) {
    session.restore();
    throw;
  }
  try {
    VOX_CUDA_TRY(cudaStreamBeginCapture(origin->handle, cudaStreamCaptureModeGlobal), op);
    began = true;
    // Fork: every stream of the set joins the capture after an event on the origin.
    events.push_back(set.events()->acquire());
    detail::record_event(events.back()->value(), origin->handle, op);
    for (std::size_t i = 1; i < set.size(); ++i)
      detail::stream_wait_event(set.state(i)->handle, events.front()->value(), op);
    const detail::capture_flag capturing;  // no event queries inside the capture
    body.run(args);
  } catch (...) {
    thrown = std::current_exception();
  }
  // Join every stream back to the origin, even after a failure (the capture must end joined).
  cudaError_t join_error = cudaSuccess;
  if (began) {
    for (std::size_t i = 1; i < set.size(); ++i) {
      try {
        events.push_back(set.events()->acquire());
      } catch (...) {
        if (thrown == nullptr) thrown = std::current_exception();
        break;
      }
      cudaError_t e = cudaEventRecord(events.back()->value(), set.state(i)->handle);
      if (e == cudaSuccess) e = cudaStreamWaitEvent(origin->handle, events.back()->value(), 0);
      if (e != cudaSuccess && join_error == cudaSuccess) join_error = e;
    }
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = began ? cudaStreamEndCapture(origin->handle, &graph) : cudaSuccess;
  exec::remove_observer(&session);
  session.restore();
  diag.stop();
  const bool capture_failed =
      began && (ended != cudaSuccess || join_error != cudaSuccess || graph == nullptr);
  if (capture_failed || thrown != nullptr) end_leftover_captures(set);

  // 3. The ledgers fn's ops touched hold marks recorded inside the capture: point them at one
  //    real event after step 1, which is what they are before any launch.
  touched = session.touched();
  try {
    if (!touched.empty()) {
      const exec::mark after = exec::record_mark(origin, op);
      for (exec::slice_ledger* l : touched) l->set_all_written(after);
    }
  } catch (...) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    throw;
  }

  if (!capture_failed && thrown == nullptr && !session.failed() && began) return graph;
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  touched.clear();
  if (!capture_failed) {
    if (thrown != nullptr) std::rethrow_exception(thrown);
    VOX_FAIL(op, "could not record the ledgers the capture touched (out of memory)");
  }
  // The capture was invalidated: name the call, if it was seen.
  std::string what;
  int code = static_cast<int>(ended != cudaSuccess ? ended : join_error);
  if (!diag.failing().empty()) {
    what = diag.failing() + " returned " + error_name(diag.failing_error()) + " during the capture";
    code = diag.failing_error();
  } else {
    what = "the capture was invalidated: " + error_name(code);
  }
  if (!diag.offender().empty() && diag.offender().rfind(diag.failing(), 0) != 0)
    what += "; first synchronising or default-stream call: " + diag.offender();
  what +=
      ". A capture (global mode) rejects every call that blocks the host, synchronises the "
      "device, allocates synchronously or uses the legacy default stream: a synchronising "
      "call was made during capture; move it out of fn";
  if (thrown != nullptr) {
    try {
      std::rethrow_exception(thrown);
    } catch (const std::exception& ex) {
      what += std::string(" [fn threw: ") + ex.what() + "]";
    } catch (...) {
      what += " [fn threw a non-standard exception]";
    }
  }
  if (!diag.watched())
    what += " (the call could not be watched" +
            (diag.unavailable().empty() ? std::string() : ": " + diag.unavailable()) +
            "; run fn under vox::profile::sync_audit to find it)";
  throw cuda_error(detail::format_error(op, what, __FILE__, __LINE__), code);
}

std::size_t count_nodes(cudaGraph_t g, bool kernels_only) {
  const char* op = "graph::nodes";
  if (g == nullptr) return 0;
  std::size_t n = 0;
  VOX_CUDA_TRY(cudaGraphGetNodes(g, nullptr, &n), op);
  if (!kernels_only || n == 0) return n;
  std::vector<cudaGraphNode_t> nodes(n);
  VOX_CUDA_TRY(cudaGraphGetNodes(g, nodes.data(), &n), op);
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cudaGraphNodeType t{};
    VOX_CUDA_TRY(cudaGraphNodeGetType(nodes[i], &t), op);
    if (t == cudaGraphNodeTypeKernel) ++k;
  }
  return k;
}
#endif

}  // namespace

graph detail::make_graph(stream_set& streams, const capture_options& opts,
                         std::unique_ptr<graph_body> body, std::vector<bound_volume> bound,
                         std::vector<void*> args) {
  auto p = std::make_unique<graph::impl>();
  p->body = std::move(body);
  p->bound = std::move(bound);
  p->args = std::move(args);
  p->opts = opts;
#if VOX_BACKEND_CUDA
  p->graph = capture_graph(streams, *p->body, p->args.data(), opts, p->bound, p->touched);
  VOX_CUDA_TRY(cudaGraphInstantiate(&p->exec, p->graph, 0), "capture");
#else
  (void)streams;  // host backend: fn runs at launch
#endif
  graph g;
  g.impl_ = std::move(p);
  return g;
}

graph::graph() noexcept = default;
graph::~graph() = default;
graph::graph(graph&&) noexcept = default;
graph& graph::operator=(graph&&) noexcept = default;

void graph::launch_(stream_set& streams, const std::vector<detail::bound_volume>* now,
                    void* const* args) {
  const char* op = "graph::launch";
  VOX_EXPECTS(impl_ != nullptr, op, "the graph is empty (default-constructed or moved from)");
  impl& g = *impl_;
  const bool rebind =
      now != nullptr && (check_binding(g.bound, *now), !same_binding(g.bound, *now));
#if VOX_BACKEND_CUDA
  if (rebind) {
    // Capture fn again for the new volumes and update the executable graph in place.
    std::vector<exec::slice_ledger*> touched;
    cudaGraph_t fresh = capture_graph(streams, *g.body, args, g.opts, *now, touched);
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(g.exec, fresh, &info) != cudaSuccess) {
      (void)cudaGetLastError();  // the refusal is not an error of later calls
      cudaGraphExec_t exec = nullptr;
      const cudaError_t e = cudaGraphInstantiate(&exec, fresh, 0);
      if (e != cudaSuccess) {
        (void)cudaGraphDestroy(fresh);
        detail::throw_cuda(e, op, "cudaGraphInstantiate(&exec, fresh, 0)", __FILE__, __LINE__);
      }
      VOX_CUDA_LOG(cudaGraphExecDestroy(g.exec), op);
      g.exec = exec;
      ++g.reinstantiations;
    }
    VOX_CUDA_LOG(cudaGraphDestroy(g.graph), op);
    g.graph = fresh;
    g.touched = std::move(touched);
    g.bound = *now;
    g.args.assign(args, args + g.bound.size());
    ++g.recaptures;
  }

  const auto& origin = streams.state(0);
  // 1. The replay comes after the earlier work on every volume the graph touches.
  join_ledgers(g.touched, origin, op);
  // 2. The replay.
  VOX_CUDA_TRY(cudaGraphLaunch(g.exec, origin->handle), op);
  // 3. One event after it: every stream of the set, and every touched ledger, follows it.
  //    Re-recording the same event on the same stream is sound: a wait already enqueued keeps
  //    the state the event had then, and a mark elsewhere that still names it (with an older
  //    sequence number on the same stream) can only wait longer.
  if (g.after == nullptr || g.after_origin != origin) {
    g.after = streams.events()->acquire();
    g.after_origin = origin;
  }
  exec::mark after;
  {
    // As record_mark: sequence numbers follow the order on the stream.
    const std::lock_guard<std::mutex> lock(origin->mutex);
    after = exec::mark{origin, origin->recorded + 1, g.after};
    detail::record_event(g.after->value(), origin->handle, op);
    __atomic_store_n(&origin->recorded, after.seq, __ATOMIC_RELEASE);
  }
  for (std::size_t i = 1; i < streams.size(); ++i)
    detail::stream_wait_event(streams.state(i)->handle, g.after->value(), op);
  for (exec::slice_ledger* l : g.touched) l->set_all_written(after);
#else
  if (rebind) {
    g.bound = *now;
    g.args.assign(args, args + g.bound.size());
    ++g.recaptures;
  }
  (void)streams;
  g.body->run(g.args.data());
#endif
}

std::size_t graph::nodes() const {
#if VOX_BACKEND_CUDA
  return impl_ != nullptr ? count_nodes(impl_->graph, false) : 0;
#else
  return 0;
#endif
}

std::size_t graph::kernel_nodes() const {
#if VOX_BACKEND_CUDA
  return impl_ != nullptr ? count_nodes(impl_->graph, true) : 0;
#else
  return 0;
#endif
}

std::size_t graph::recaptures() const noexcept { return impl_ != nullptr ? impl_->recaptures : 0; }
std::size_t graph::reinstantiations() const noexcept {
  return impl_ != nullptr ? impl_->reinstantiations : 0;
}

std::vector<const exec::slice_ledger*> graph::touched_ledgers() const {
  std::vector<const exec::slice_ledger*> t;
  if (impl_ != nullptr) t.assign(impl_->touched.begin(), impl_->touched.end());
  return t;
}

}  // namespace vox
