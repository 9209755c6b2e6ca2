#include <voxstream/profile/sync_audit.hpp>

#if VOX_BACKEND_CUDA
#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/profile/timeline.hpp>

#include "cupti_hub.hpp"

namespace vox::profile {

const char* finding_kind_name(finding_kind k) noexcept {
  switch (k) {
    case finding_kind::host_sync:
      return "host_sync";
    case finding_kind::sync_alloc:
      return "sync_alloc";
    case finding_kind::sync_copy:
      return "sync_copy";
    case finding_kind::default_stream:
      return "default_stream";
    case finding_kind::blocking_stream:
      return "blocking_stream";
  }
  return "unknown";
}

std::string audit_finding::where() const {
  return has_stream ? detail::stream_name(stream) : std::string();
}

namespace {

bool to_kind(detail::call_class c, finding_kind& k) {
  switch (c) {
    case detail::call_class::host_sync:
      k = finding_kind::host_sync;
      return true;
    case detail::call_class::sync_alloc:
      k = finding_kind::sync_alloc;
      return true;
    case detail::call_class::sync_copy:
      k = finding_kind::sync_copy;
      return true;
    case detail::call_class::default_stream:
      k = finding_kind::default_stream;
      return true;
    case detail::call_class::blocking_stream:
      k = finding_kind::blocking_stream;
      return true;
    case detail::call_class::none:
      break;
  }
  return false;
}

struct group {
  std::string label;  // the function, or "kernel launch <kernel>"
  std::string where;
  std::size_t count{0};
};

// Groups findings of the given kinds by (function, kernel, stream), in order of first call.
std::vector<group> groups_of(const std::vector<audit_finding>& f,
                             std::initializer_list<finding_kind> kinds, std::size_t& total) {
  std::vector<group> g;
  total = 0;
  for (const auto& x : f) {
    if (std::find(kinds.begin(), kinds.end(), x.kind) == kinds.end()) continue;
    ++total;
    const std::string label = x.kernel.empty() ? x.function : x.function + " " + x.kernel;
    const std::string where = x.where();
    auto it = std::find_if(g.begin(), g.end(),
                           [&](const group& e) { return e.label == label && e.where == where; });
    if (it == g.end()) {
      g.push_back({label, where, 1});
    } else {
      ++it->count;
    }
  }
  return g;
}

std::string join(const std::vector<group>& g) {
  std::string s;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (i > 0) s += ", ";
    s += g[i].label + " x" + std::to_string(g[i].count);
    if (!g[i].where.empty()) s += " (" + g[i].where + ")";
  }
  return s;
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::string audit_report(const std::vector<audit_finding>& f) {
  if (f.empty())
    return "sync audit: no synchronising calls and no work on a default stream: nothing "
           "serialises the pipeline";
  std::string s = "sync audit: " + plural(f.size(), "finding", "findings") + "\n";
  std::size_t n = 0;
  auto g = groups_of(f, {finding_kind::host_sync}, n);
  if (n > 0)
    s += "- " + plural(n, "synchronising call", "synchronising calls") + ": " + join(g) +
         " - each one blocks the host until the device, stream or event is idle, so the host "
         "cannot run ahead and the pipeline serialises\n";
  g = groups_of(f, {finding_kind::sync_alloc}, n);
  if (n > 0)
    s += "- " + plural(n, "synchronous allocation or free", "synchronous allocations or frees") +
         ": " + join(g) +
         " - these synchronise the device (a free waits for all work); allocate stream-ordered "
         "(cudaMallocAsync / cudaFreeAsync, as vox::volume does) and allocate pinned host "
         "memory before the pipeline starts\n";
  g = groups_of(f, {finding_kind::sync_copy}, n);
  if (n > 0)
    s += "- " + plural(n, "synchronous copy or memset", "synchronous copies or memsets") + ": " +
         join(g) +
         " - each one blocks the host and runs on the legacy default stream; use the Async "
         "variants on a stream of the set (vox::upload / vox::download)\n";
  g = groups_of(f, {finding_kind::default_stream}, n);
  if (n > 0)
    s += "- " + plural(n, "call", "calls") + " on a default stream: " + join(g) +
         " - work on the legacy default stream waits for, and blocks, every blocking stream of "
         "the device; the per-thread default stream serialises all work of its thread\n";
  g = groups_of(f, {finding_kind::blocking_stream}, n);
  if (n > 0)
    s += "- " + plural(n, "blocking stream created", "blocking streams created") + ": " + join(g) +
         " - such streams synchronise implicitly with the legacy default stream; create them "
         "with cudaStreamNonBlocking\n";
  s.pop_back();  // the last newline
  return s;
}

struct sync_audit::state final : detail::api_listener {
  mutable std::mutex mutex;
  std::vector<audit_finding> findings;
  bool active{false};

  void on_call(const detail::api_call& c) noexcept override {
    if (c.site != CUPTI_API_ENTER) return;
    finding_kind k{};
    if (!to_kind(c.info.cls, k)) return;
    try {
      audit_finding f;
      f.kind = k;
      f.function = detail::api_name(c.domain, c.cbid, c.function);
      if (c.symbol != nullptr) f.kernel = display_name(demangle(c.symbol));
      f.has_stream = c.info.has_stream;
      f.stream = c.info.stream;
      std::lock_guard<std::mutex> lock(mutex);
      findings.push_back(std::move(f));
    } catch (...) {}
  }
};

sync_audit::sync_audit() : state_(std::make_unique<state>()) {
  std::string why;
  if (!detail::add_listener(state_.get(), detail::listen_scope::audited_calls, why))
    throw vox::error(vox::detail::format_error("sync_audit", why, __FILE__, __LINE__));
  state_->active = true;
}

sync_audit::~sync_audit() { stop(); }
sync_audit::sync_audit(sync_audit&&) noexcept = default;
sync_audit& sync_audit::operator=(sync_audit&& o) noexcept {
  if (this != &o) {
    stop();
    state_ = std::move(o.state_);
  }
  return *this;
}

void sync_audit::stop() noexcept {
  if (state_ != nullptr && state_->active) {
    detail::remove_listener(state_.get());
    state_->active = false;
  }
}

bool sync_audit::auditing() const noexcept { return state_ != nullptr && state_->active; }

std::vector<audit_finding> sync_audit::findings() const {
  if (state_ == nullptr) return {};
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->findings;
}

std::size_t sync_audit::count() const { return findings().size(); }

std::size_t sync_audit::count(finding_kind k) const {
  const auto f = findings();
  return static_cast<std::size_t>(
      std::count_if(f.begin(), f.end(), [&](const audit_finding& x) { return x.kind == k; }));
}

std::size_t sync_audit::synchronising_calls() const {
  return count(finding_kind::host_sync) + count(finding_kind::sync_alloc) +
         count(finding_kind::sync_copy);
}

std::size_t sync_audit::default_stream_calls() const { return count(finding_kind::default_stream); }

std::string sync_audit::report() const { return audit_report(findings()); }

}  // namespace vox::profile
#endif
