// launch_per_slice as one cached CUDA graph (launch.hpp, slice_graph.hpp). On the host backend
// there is no launch_per_slice: only stream_set::slice_graphs() exists, over an empty cache.
#include "slice_graph.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include <voxstream/core/error.hpp>
#include <voxstream/exec/stream_set.hpp>

#include "../detail/cuda_check.hpp"

#if VOX_BACKEND_CUDA
#include <cuda.h>
#include <cudaTypedefs.h>

#include "capture_flag.hpp"
#endif

namespace vox {

exec::slice_graph_cache& stream_set::slice_graphs() {
  expect_streams_("launch_per_slice");
  if (slice_graphs_ == nullptr) slice_graphs_ = std::make_shared<exec::slice_graph_cache>();
  return *slice_graphs_;
}

#if VOX_BACKEND_CUDA

namespace {
constexpr const char* op_name = "launch_per_slice";
}  // namespace

// ============================================================================ the cache

namespace exec {

struct slice_graph_cache::entry {
  // Key: what the executable graph's nodes fix (kernel, configuration, node count) and the
  // layout of a slice's packed arguments.
  const void* kernel{nullptr};
  bool driver_function{false};
  dim3u grid{};
  dim3u block{};
  std::size_t smem{0};
  std::size_t slices{0};
  std::size_t stride{0};
  std::vector<std::size_t> sizes;
  std::vector<std::size_t> offsets;

  cudaGraph_t graph{nullptr};
  cudaGraphExec_t exec{nullptr};
  std::vector<cudaGraphNode_t> nodes;  // node z launches slice z
  std::vector<unsigned char> bytes;    // the arguments the nodes hold: slices * stride
  std::uint64_t last_use{0};

  entry() = default;
  entry(const entry&) = delete;
  entry& operator=(const entry&) = delete;
  ~entry() {
    // A graph still running is freed when it completes (cudaGraphExecDestroy does not wait).
    if (exec != nullptr) VOX_CUDA_LOG(cudaGraphExecDestroy(exec), op_name);
    if (graph != nullptr) VOX_CUDA_LOG(cudaGraphDestroy(graph), op_name);
  }

  [[nodiscard]] bool matches(const detail::slice_launch& l) const noexcept {
    if (kernel != l.kernel || driver_function != l.driver_function || !(grid == l.grid) || !(block == l.block) || smem != l.smem ||
        slices != l.slices || stride != l.stride || sizes.size() != l.params)
      return false;
    for (std::size_t i = 0; i < l.params; ++i)
      if (sizes[i] != l.sizes[i] || offsets[i] != l.offsets[i]) return false;
    return true;
  }
};

slice_graph_cache::~slice_graph_cache() = default;

namespace {

cudaKernelNodeParams node_params(const detail::slice_launch& l, void** params) {
  cudaKernelNodeParams p{};
  p.func = const_cast<void*>(l.kernel);
  p.gridDim = dim3(l.grid.x, l.grid.y, l.grid.z);
  p.blockDim = dim3(l.block.x, l.block.y, l.block.z);
  p.sharedMemBytes = static_cast<unsigned int>(l.smem);
  p.kernelParams = params;
  p.extra = nullptr;
  return p;
}

// Kernel nodes of a CUfunction (slice_launch::driver_function): the driver's calls, found
// through the runtime so that the library does not link libcuda. cudaGraph_t, cudaGraphNode_t
// and cudaGraphExec_t are the driver's CUgraph, CUgraphNode and CUgraphExec.
struct driver_graph_api {
  PFN_cuGraphAddKernelNode_v12000 add{nullptr};
  PFN_cuGraphExecKernelNodeSetParams_v12000 set{nullptr};
};

const driver_graph_api& driver_graph() {
  static const driver_graph_api api = [] {
    driver_graph_api a;
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuGraphAddKernelNode", &p, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      a.add = reinterpret_cast<PFN_cuGraphAddKernelNode_v12000>(p);
    p = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuGraphExecKernelNodeSetParams", &p, 12000,
                                         cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      a.set = reinterpret_cast<PFN_cuGraphExecKernelNodeSetParams_v12000>(p);
    (void)cudaGetLastError();
    return a;
  }();
  VOX_EXPECTS(api.add != nullptr && api.set != nullptr, op_name,
              "the CUDA driver's graph kernel node calls could not be found (driver too old?)");
  return api;
}

CUDA_KERNEL_NODE_PARAMS driver_node_params(const detail::slice_launch& l, void** params) {
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = static_cast<CUfunction>(const_cast<void*>(l.kernel));
  p.gridDimX = l.grid.x;
  p.gridDimY = l.grid.y;
  p.gridDimZ = l.grid.z;
  p.blockDimX = l.block.x;
  p.blockDimY = l.block.y;
  p.blockDimZ = l.block.z;
  p.sharedMemBytes = static_cast<unsigned int>(l.smem);
  p.kernelParams = params;
  p.extra = nullptr;
  p.kern = nullptr;
  p.ctx = nullptr;
  return p;
}

void driver_check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS)
    throw vox::error(std::string(op_name) + ": " + call + " failed (CUresult " +
                     std::to_string(static_cast<int>(r)) + ")");
}

// Adds slice z's kernel node after `dep` (or none).
void add_node(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dep,
              const detail::slice_launch& l, void** params) {
  if (l.driver_function) {
    const CUDA_KERNEL_NODE_PARAMS p = driver_node_params(l, params);
    driver_check(driver_graph().add(node, graph, dep, dep != nullptr ? 1 : 0, &p),
                 "cuGraphAddKernelNode");
    return;
  }
  const cudaKernelNodeParams p = node_params(l, params);
  VOX_CUDA_TRY(cudaGraphAddKernelNode(node, graph, dep, dep != nullptr ? 1 : 0, &p), op_name);
}

// Gives node `node` of `exec` new arguments.
void set_node(cudaGraphExec_t exec, cudaGraphNode_t node, const detail::slice_launch& l,
              void** params) {
  if (l.driver_function) {
    const CUDA_KERNEL_NODE_PARAMS p = driver_node_params(l, params);
    driver_check(driver_graph().set(exec, node, &p), "cuGraphExecKernelNodeSetParams");
    return;
  }
  const cudaKernelNodeParams p = node_params(l, params);
  VOX_CUDA_TRY(cudaGraphExecKernelNodeSetParams(exec, node, &p), op_name);
}

// Points params[i] at parameter i of the record at `record`.
void point_at(std::vector<void*>& params, const detail::slice_launch& l, unsigned char* record) {
  for (std::size_t i = 0; i < l.params; ++i) params[i] = record + l.offsets[i];
}

}  // namespace

slice_graph_cache::entry* slice_graph_cache::find_(const detail::slice_launch& l) noexcept {
  for (auto& e : entries_)
    if (e->matches(l)) return e.get();
  return nullptr;
}

slice_graph_cache::entry& slice_graph_cache::build_(const detail::slice_launch& l) {
  auto e = std::make_unique<entry>();
  e->kernel = l.kernel;
  e->driver_function = l.driver_function;
  e->grid = l.grid;
  e->block = l.block;
  e->smem = l.smem;
  e->slices = l.slices;
  e->stride = l.stride;
  e->sizes.assign(l.sizes, l.sizes + l.params);
  e->offsets.assign(l.offsets, l.offsets + l.params);
  e->nodes.resize(l.slices);

  VOX_CUDA_TRY(cudaGraphCreate(&e->graph, 0), op_name);
  // Slice z follows slice z - chains: the graph is `chains` independent chains, as a capture of
  // per-slice launches on that many streams would record. 4096 independent root nodes took
  // 0.95 µs per slice to replay on an H200, against 0.20 µs for 32 captured chains.
  const std::size_t chains = std::min(l.slices, slice_graph_chains);
  for (std::size_t z = 0; z < l.slices; ++z) {
    point_at(params_, l, scratch_.data() + z * l.stride);
    const cudaGraphNode_t* dep = z >= chains ? &e->nodes[z - chains] : nullptr;
    add_node(&e->nodes[z], e->graph, dep, l, params_.data());
  }
  VOX_CUDA_TRY(cudaGraphInstantiate(&e->exec, e->graph, 0), op_name);

  if (entries_.size() >= capacity) {
    const auto oldest = std::min_element(
        entries_.begin(), entries_.end(),
        [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
    entries_.erase(oldest);
    ++stats_.evictions;
  }
  e->bytes.swap(scratch_);  // the nodes hold this call's arguments now
  entries_.push_back(std::move(e));
  ++stats_.built;
  return *entries_.back();
}

void slice_graph_cache::update_(entry& e, const detail::slice_launch& l) {
  std::size_t changed = 0;
  for (std::size_t z = 0; z < l.slices; ++z) {
    unsigned char* now = scratch_.data() + z * l.stride;
    if (std::memcmp(now, e.bytes.data() + z * l.stride, l.stride) == 0) continue;
    point_at(params_, l, now);
    // Only later launches see the new arguments; one already enqueued keeps the old ones.
    set_node(e.exec, e.nodes[z], l, params_.data());
    ++changed;
  }
  e.bytes.swap(scratch_);
  ++stats_.updates;
  stats_.nodes_updated += changed;
}

void slice_graph_cache::launch(const detail::slice_launch& l, stream_view s) {
  VOX_EXPECTS(l.slices > 0 && l.pack != nullptr, op_name, "nothing to launch");
  VOX_EXPECTS(l.smem <= std::numeric_limits<unsigned int>::max(), op_name,
              "dynamic shared memory of " + std::to_string(l.smem) + " bytes is too large");
  VOX_EXPECTS(l.stride == 0 || l.slices <= std::numeric_limits<std::size_t>::max() / l.stride,
              op_name, "the packed arguments overflow");
  // This call's arguments, zeroed first so that the gaps between parameters compare equal.
  scratch_.assign(l.slices * l.stride, 0);
  params_.resize(l.params == 0 ? 1 : l.params);
  l.pack(l.args, l.slices, l.stride, l.offsets, scratch_.data());

  entry* e = find_(l);
  if (e == nullptr) {
    e = &build_(l);
  } else if (std::memcmp(scratch_.data(), e->bytes.data(), scratch_.size()) != 0) {
    try {
      update_(*e, l);
    } catch (...) {
      // Some nodes may hold the new arguments and some the old: drop the graph.
      entries_.erase(std::find_if(entries_.begin(), entries_.end(),
                                  [&](const auto& p) { return p.get() == e; }));
      throw;
    }
  }
  e->last_use = ++tick_;
  VOX_CUDA_TRY(cudaGraphLaunch(e->exec, s.value()), op_name);
  ++stats_.launches;
}

detail::slice_graph_stats slice_graph_cache::stats() const noexcept {
  detail::slice_graph_stats st = stats_;
  st.cached = entries_.size();
  return st;
}

}  // namespace exec

// ============================================================================ detail

namespace detail {

bool use_slice_graph(const stream_set& streams, const std::vector<exec::access>& acc,
                     const std::vector<unsigned char>& sliced, std::size_t slices) {
  // A moved-from set (no streams) goes the direct way, where run_op rejects it.
  if (streams.size() == 0 || !streams.options().per_slice_graphs ||
      slices < per_slice_graph_min_slices)
    return false;
  for (std::size_t i = 0; i < acc.size(); ++i) {
    const exec::access& a = acc[i];
    // A read with a z halo is fine: run_op rejects a halo read of a volume the op writes, so
    // the slices stay independent.
    if (a.whole && a.mode == exec::access_mode::write) return false;
    if (a.mode != exec::access_mode::write) continue;
    // A written volume passed both as a slice pointer and as a whole-volume pointer: the
    // kernel may reach other slices through the latter.
    bool as_slice = false, as_plain = false;
    for (std::size_t j = 0; j < acc.size(); ++j) {
      if (acc[j].data != a.data) continue;
      (j < sliced.size() && sliced[j] != 0 ? as_slice : as_plain) = true;
    }
    if (as_slice && as_plain) return false;
  }
  // Inside vox::capture (or any capture of the origin), keep the launches that the capture
  // records as they are.
  if (capturing_on_this_thread()) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  VOX_CUDA_TRY(cudaStreamIsCapturing(streams.stream(0).value(), &status), op_name);
  return status == cudaStreamCaptureStatusNone;
}

void launch_slice_graph(stream_set& streams, stream_view s, const slice_launch& l) {
  streams.slice_graphs().launch(l, s);
}

slice_graph_stats slice_graph_stats_of(stream_set& streams) {
  return streams.slice_graphs().stats();
}

}  // namespace detail

#endif  // VOX_BACKEND_CUDA

}  // namespace vox
