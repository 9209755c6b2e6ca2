// voxstream._voxstream: launch_per_slice of a user kernel from Python, and its occupancy report.
//
// On the cuda backend the kernel is a CUfunction handle (an int: cupy.RawKernel.kernel.ptr; the
// package extracts it) launched with cuLaunchKernel once per slice on the slice's stream, inside
// exec::run_op: the ledger orders the launches against every other op by events only, exactly
// as vox::launch_per_slice's direct path does. The driver's entry points are found through the
// runtime (cudaGetDriverEntryPointByVersion), so the module does not link libcuda. By default
// (graph=True, as in C++) the launches run as the set's cached per-slice graph instead, its
// nodes built as driver kernel nodes of the CUfunction (detail::slice_launch::driver_function)
// where detail::use_slice_graph allows it; under capture the launches are recorded as they are.
//
// On the host backend there is no CUDA kernel: the "kernel" is a Python callable that the
// package calls per slice with numpy views (python/voxstream/_launch.py), run inside the same
// run_op, so the ledger logic is the same and testable without a GPU.
#include "common.hpp"

#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <voxstream/config.hpp>
#include <voxstream/exec/grid.hpp>
#include <voxstream/exec/launch.hpp>
#include <voxstream/exec/occupancy.hpp>
#include <voxstream/ops/elementwise.hpp>

#if VOX_BACKEND_CUDA
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#endif

namespace voxpy {

namespace {

constexpr const char* op_name = "voxstream.launch_per_slice";

using xyz = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;

/// A declared access: the volume, mode (0 read, 1 write), z halo of a read, whole volume, and
/// whether the halo wraps around the volume's ends.
using access_spec = std::tuple<Volume*, int, std::size_t, bool, bool>;

/// One kernel parameter: kind (0 value, 1 pointer to the volume of access `index`, 2 pointer
/// to slice z of it, 3 the slice index z), `index`, the value's bytes (kind 0; kind 3: its size
/// in bytes is bytes.size(), 4 or 8), and its alignment.
using param_spec = std::tuple<int, std::size_t, nb::bytes, std::size_t>;

enum param_kind : int { value = 0, pointer = 1, slice_pointer = 2, slice_index = 3 };

/// A param_spec copied out of its Python objects, usable without the GIL.
struct param {
  int kind{value};
  std::size_t index{0};
  std::string bytes;
  std::size_t align{1};
};

std::vector<param> params_of(const std::vector<param_spec>& specs) {
  std::vector<param> v;
  v.reserve(specs.size());
  for (const auto& [kind, index, bytes, align] : specs)
    v.push_back(param{kind, index, std::string(bytes.c_str(), bytes.size()), align});
  return v;
}

vox::dim3u dim(const xyz& d, const char* what) {
  const vox::dim3u r{std::get<0>(d), std::get<1>(d), std::get<2>(d)};
  VOX_EXPECTS(r.x >= 1 && r.y >= 1 && r.z >= 1, op_name,
              std::string(what) + " must be at least 1 in every dimension");
  return r;
}

/// The accesses as exec::access, each checked (empty volumes, modes).
std::vector<vox::exec::access> accesses_of(const std::vector<access_spec>& specs) {
  std::vector<vox::exec::access> acc;
  acc.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& [vol, mode, halo, whole, periodic] = specs[i];
    VOX_EXPECTS(vol != nullptr, op_name, "access " + std::to_string(i) + " has no volume");
    VOX_EXPECTS(mode == 0 || mode == 1, op_name, "access mode must be read (0) or write (1)");
    VOX_EXPECTS(mode == 0 || halo == 0, op_name, "a write access has no halo");
    vox::exec::access a;
    a.ledger = vol->data() == nullptr ? nullptr : &vol->ledger();
    a.ext = vol->extent();
    a.mode = mode == 0 ? vox::exec::access_mode::read : vox::exec::access_mode::write;
    a.halo = halo;
    a.whole = whole;
    a.periodic = periodic;
    a.data = vol->data();
    a.elem_bytes = vox::dtype_size(vol->dtype());
    acc.push_back(a);
  }
  return acc;
}

#if VOX_BACKEND_CUDA
// --- the driver API, through the runtime's entry-point query -------------------------------
struct driver_api {
  PFN_cuLaunchKernel_v4000 launch{nullptr};
  PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 occupancy{nullptr};
  PFN_cuFuncGetParamInfo_v12040 param_info{nullptr};  // null on drivers before 12.4
  PFN_cuGetErrorName_v6000 error_name{nullptr};
};

template <class F>
F entry_point(const char* name, unsigned version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<F>(p);
}

const driver_api& driver() {
  static const driver_api api = [] {
    driver_api a;
    a.launch = entry_point<PFN_cuLaunchKernel_v4000>("cuLaunchKernel", 4000);
    a.occupancy = entry_point<PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050>(
        "cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050);
    a.param_info = entry_point<PFN_cuFuncGetParamInfo_v12040>("cuFuncGetParamInfo", 12040);
    a.error_name = entry_point<PFN_cuGetErrorName_v6000>("cuGetErrorName", 6000);
    return a;
  }();
  if (api.launch == nullptr || api.occupancy == nullptr) {
    throw vox::error(std::string(op_name) +
                     ": the CUDA driver's cuLaunchKernel could not be found (driver too old?)");
  }
  return api;
}

void driver_check(CUresult r, const char* op, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (driver().error_name != nullptr) driver().error_name(r, &name);
  throw vox::error(std::string(op) + ": " + call + " failed: " +
                   (name != nullptr ? name : ("CUresult " + std::to_string(static_cast<int>(r)))));
}

/// Checks the parameter sizes against the kernel's (cuFuncGetParamInfo, CUDA 12.4 drivers and
/// later; skipped on older ones): a mismatch would otherwise pass garbage to the kernel.
void check_params(CUfunction f, const std::vector<std::size_t>& sizes) {
  const auto info = driver().param_info;
  if (info == nullptr) return;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::size_t off = 0, size = 0;
    const CUresult r = info(f, i, &off, &size);
    VOX_EXPECTS(r == CUDA_SUCCESS, op_name,
                "the kernel takes " + std::to_string(i) + " parameters, " +
                    std::to_string(sizes.size()) + " arguments given");
    VOX_EXPECTS(size == sizes[i], op_name,
                "argument " + std::to_string(i) + " is " + std::to_string(sizes[i]) +
                    " bytes, the kernel's parameter " + std::to_string(i) + " is " +
                    std::to_string(size) +
                    " bytes (pass numpy scalars of the parameter's type, e.g. numpy.int32(n); "
                    "Python ints are int64 and floats float64)");
  }
  std::size_t off = 0, size = 0;
  VOX_EXPECTS(info(f, sizes.size(), &off, &size) != CUDA_SUCCESS, op_name,
              "the kernel takes more than the " + std::to_string(sizes.size()) +
                  " arguments given");
}
#endif

/// Where each parameter lies in one slice's packed record (natural alignment, as the C ABI
/// lays out a kernel's parameters), and the record's size.
struct layout {
  std::vector<std::size_t> offsets;
  std::vector<std::size_t> sizes;
  std::size_t bytes{0};
  std::size_t widest{1};  ///< the widest alignment
};

layout layout_of(const std::vector<param>& params, std::size_t naccess) {
  layout l;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [kind, index, bytes, align] = params[i];
    std::size_t size = 0;
    std::size_t al = align;
    switch (kind) {
      case value:
        size = bytes.size();
        VOX_EXPECTS(size > 0, op_name, "argument " + std::to_string(i) + " is empty");
        VOX_EXPECTS(al >= 1 && (al & (al - 1)) == 0 && al <= 16, op_name,
                    "argument " + std::to_string(i) + ": alignment must be 1, 2, 4, 8 or 16");
        break;
      case pointer:
      case slice_pointer:
        VOX_EXPECTS(index < naccess, op_name,
                    "argument " + std::to_string(i) + " names no declared access");
        size = al = sizeof(void*);
        break;
      case slice_index:
        size = al = bytes.size();
        VOX_EXPECTS(size == 4 || size == 8, op_name, "the slice index is 4 or 8 bytes");
        break;
      default:
        VOX_FAIL(op_name, "argument " + std::to_string(i) + " has an unknown kind");
    }
    const std::size_t off = (l.bytes + al - 1) / al * al;
    l.widest = al > l.widest ? al : l.widest;
    l.offsets.push_back(off);
    l.sizes.push_back(size);
    l.bytes = off + size;
  }
  return l;
}

#if VOX_BACKEND_CUDA
/// Writes slice z's parameter values into `record` (l.bytes long).
void pack(const std::vector<param>& params, const std::vector<access_spec>& acc,
          const layout& l, std::size_t z, unsigned char* record) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [kind, index, bytes, align] = params[i];
    (void)align;
    unsigned char* to = record + l.offsets[i];
    if (kind == value) {
      std::memcpy(to, bytes.data(), bytes.size());
    } else if (kind == slice_index) {
      if (bytes.size() == 4) {
        const auto v = static_cast<std::uint32_t>(z);
        std::memcpy(to, &v, 4);
      } else {
        const auto v = static_cast<std::uint64_t>(z);
        std::memcpy(to, &v, 8);
      }
    } else {
      const Volume& v = *std::get<0>(acc[index]);
      const auto* base = static_cast<const unsigned char*>(v.data());
      const std::size_t off =
          kind == slice_pointer ? z * v.extent().slice_voxels() * vox::dtype_size(v.dtype()) : 0;
      const void* p = base + off;
      std::memcpy(to, &p, sizeof p);
    }
  }
}

/// What pack_all reads: the launch's parameters, accesses and layout.
struct pack_args {
  const std::vector<param>* params;
  const std::vector<access_spec>* acc;
  const layout* l;
};

/// detail::pack_slices_fn for the graph path: every slice's record.
void pack_all(const void* args, std::size_t slices, std::size_t stride, const std::size_t*,
              unsigned char* out) {
  const auto& a = *static_cast<const pack_args*>(args);
  for (std::size_t z = 0; z < slices; ++z) pack(*a.params, *a.acc, *a.l, z, out + z * stride);
}
#endif

/// voxstream._launch_per_slice: launches `kernel` once per slice of the op's extent (that of
/// the first per-slab access) on the slice's stream, under the ledger. CUDA: `kernel` is a
/// CUfunction as an int. Host: a Python callable called as kernel(z) per slice, in slice order
/// within each slab (the package builds it around the user's function). Returns the number of
/// slices launched.
std::size_t launch_per_slice(StreamSet& ss, nb::object kernel, xyz grid, xyz block,
                             std::size_t smem, const std::vector<access_spec>& acc_specs,
                             const std::vector<param_spec>& param_specs, bool graph) {
  const std::vector<param> params = params_of(param_specs);
  const vox::dim3u g = dim(grid, "grid");
  const vox::dim3u b = dim(block, "block");
  VOX_EXPECTS(!acc_specs.empty(), op_name,
              "declare at least one volume access (voxstream.slice_ptr(voxstream.read_access(v)) "
              "or write_access)");
  const std::vector<vox::exec::access> acc = accesses_of(acc_specs);
  const vox::extent3 e = vox::detail::op_extent(acc, op_name);
  const layout l = layout_of(params, acc_specs.size());
  vox::stream_set& set = *ss.set;
#if VOX_BACKEND_CUDA
  const auto handle = nb::cast<std::uintptr_t>(kernel);
  VOX_EXPECTS(handle != 0, op_name, "the kernel handle is null");
  const auto f = reinterpret_cast<CUfunction>(handle);
  const driver_api& api = driver();
  check_params(f, l.sizes);
  VOX_EXPECTS(smem <= 0xffffffffu, op_name, "dynamic shared memory is too large");
  // The graph path (the default): vox::launch_per_slice's cached graph of per-slice kernel nodes, on
  // stream 0 of the set, where detail::use_slice_graph allows it (enough slices, independent
  // slices, no capture); otherwise the direct launches below.
  std::vector<unsigned char> sliced(acc_specs.size(), 0);
  bool mixed = false;  // a written access passed both as a slice and as a whole pointer
  {
    std::vector<unsigned char> plain(acc_specs.size(), 0);
    for (const auto& p : params) {
      if (p.kind == slice_pointer) sliced[p.index] = 1;
      if (p.kind == pointer) plain[p.index] = 1;
    }
    for (std::size_t i = 0; i < acc_specs.size(); ++i)
      mixed = mixed || (sliced[i] != 0 && plain[i] != 0 && std::get<1>(acc_specs[i]) == 1);
  }
  if (graph && !mixed && vox::detail::use_slice_graph(set, acc, sliced, e.z)) {
    const pack_args pa{&params, &acc_specs, &l};
    vox::detail::slice_launch sl;
    sl.kernel = reinterpret_cast<const void*>(f);
    sl.driver_function = true;
    sl.grid = g;
    sl.block = b;
    sl.smem = smem;
    sl.slices = e.z;
    sl.params = params.size();
    sl.sizes = l.sizes.data();
    sl.offsets = l.offsets.data();
    sl.stride = (l.bytes + l.widest - 1) / l.widest * l.widest;
    sl.pack = &pack_all;
    sl.args = &pa;
    nb::gil_scoped_release nogil;
    vox::exec::run_op(set, op_name, std::vector<vox::slab>{vox::slab{0, 0, e.z}}, acc,
                      [&](vox::stream_view s, const vox::slab&) {
                        vox::detail::launch_slice_graph(set, s, sl);
                      });
    return e.z;
  }
  std::vector<unsigned char> record(l.bytes == 0 ? 1 : l.bytes);
  std::vector<void*> ptrs(params.size() == 0 ? 1 : params.size());
  for (std::size_t i = 0; i < params.size(); ++i) ptrs[i] = record.data() + l.offsets[i];
  {
    nb::gil_scoped_release nogil;
    vox::exec::run_op(set, op_name, set.plan(e.z), acc,
                      [&](vox::stream_view s, const vox::slab& w) {
                        for (std::size_t z = w.z0; z < w.z1; ++z) {
                          pack(params, acc_specs, l, z, record.data());
                          // cuLaunchKernel copies the parameters: one record serves all.
                          driver_check(api.launch(f, g.x, g.y, g.z, b.x, b.y, b.z,
                                                  static_cast<unsigned>(smem),
                                                  reinterpret_cast<CUstream>(s.value()),
                                                  ptrs.data(), nullptr),
                                       op_name, "cuLaunchKernel");
                        }
                      });
  }
#else
  (void)smem, (void)g, (void)b, (void)graph;
  VOX_EXPECTS(PyCallable_Check(kernel.ptr()) != 0, op_name,
              "on the host backend the kernel is a Python callable (called per slice with numpy "
              "views); CUDA kernels need the cuda backend");
  // The ops of the host backend run on the calling thread: the callable runs with the GIL held.
  vox::exec::run_op(set, op_name, set.plan(e.z), acc, [&](vox::stream_view, const vox::slab& w) {
    for (std::size_t z = w.z0; z < w.z1; ++z) kernel(z);
  });
#endif
  return e.z;
}

/// The occupancy report of `kernel` (a CUfunction as an int) with grid x block and `smem`.
vox::occupancy_report occupancy(std::uintptr_t kernel, xyz grid, xyz block, std::size_t smem) {
  constexpr const char* op = "voxstream.occupancy";
  const vox::dim3u g = dim(grid, "grid");
  const vox::dim3u b = dim(block, "block");
#if VOX_BACKEND_CUDA
  VOX_EXPECTS(kernel != 0, op, "the kernel handle is null");
  int per_sm = 0;
  driver_check(driver().occupancy(&per_sm, reinterpret_cast<CUfunction>(kernel),
                                  static_cast<int>(vox::threads_of(b)), smem),
               op, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  int dev = 0;
  int sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    throw vox::error(std::string(op) + ": could not query the device's multiprocessor count");
  }
  // Compute capability 7.0 through 9.0 allow 128 resident kernels per device (as vox::occupancy).
  return vox::make_occupancy_report(per_sm, sms, static_cast<std::int64_t>(vox::blocks_of(g)),
                                    128);
#else
  (void)kernel, (void)g, (void)b, (void)smem;
  throw vox::error(std::string(op) +
                   ": not available on the host backend (there is no GPU; "
                   "voxstream.occupancy_report builds a report from given numbers)");
#endif
}

/// _testing.enqueue_loop: the host time of one enqueue of op `op` ("fill": out = 1; "copy":
/// out = in; "add": out = in + 1) called `n` times in a C++ loop, in µs per call (steady clock,
/// without the GIL; the set is synchronised before, not after). What bench/python_overhead.py
/// sets the same calls from Python against.
double enqueue_loop(const std::string& op, Volume& in, Volume& out, std::size_t n) {
  VOX_EXPECTS(op == "fill" || op == "copy" || op == "add", "_testing.enqueue_loop",
              "op is fill, copy or add");
  VOX_EXPECTS(n > 0, "_testing.enqueue_loop", "n must be positive");
  VOX_EXPECTS(in.dtype() == out.dtype() && in.extent() == out.extent(), "_testing.enqueue_loop",
              "in and out must have the same dtype and shape");
  nb::gil_scoped_release nogil;
  return std::visit(
      [&](auto& a) -> double {
        using T = typename std::decay_t<decltype(a)>::value_type;
        auto& b = std::get<vox::volume<T>>(out.v);
        vox::stream_set& set = *in.set;
        set.synchronize();
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < n; ++i) {
          if (op == "fill") {
            vox::fill(set, b, T{1});
          } else if (op == "copy") {
            vox::copy(set, static_cast<const vox::volume<T>&>(a), b);
          } else {
            vox::add(set, static_cast<const vox::volume<T>&>(a), 1.0, b);
          }
        }
        const auto t1 = std::chrono::steady_clock::now();
        return std::chrono::duration<double, std::micro>(t1 - t0).count() /
               static_cast<double>(n);
      },
      in.v);
}

/// _testing.slice_graph_stats: the counters of the set's launch_per_slice graph cache (graphs
/// built, argument updates, graph launches, evictions, graphs held), so that a test can tell
/// which path a launch took. CUDA only: the host backend has no graphs.
nb::dict slice_graph_stats(StreamSet& ss) {
#if VOX_BACKEND_CUDA
  const vox::detail::slice_graph_stats st = vox::detail::slice_graph_stats_of(*ss.set);
  nb::dict d;
  d["built"] = st.built;
  d["updates"] = st.updates;
  d["nodes_updated"] = st.nodes_updated;
  d["launches"] = st.launches;
  d["evictions"] = st.evictions;
  d["cached"] = st.cached;
  return d;
#else
  (void)ss;
  throw vox::error("voxstream._testing.slice_graph_stats: not available on the host backend "
                   "(launch_per_slice takes no CUDA graph there)");
#endif
}

}  // namespace

void bind_launch(nb::module_& m) {
  nb::class_<vox::occupancy_report>(m, "OccupancyReport",
                                    "How many launches of a kernel's grid fit on the GPU at once")
      .def_ro("blocks_per_sm", &vox::occupancy_report::blocks_per_sm)
      .def_ro("sm_count", &vox::occupancy_report::sm_count)
      .def_ro("resident_blocks", &vox::occupancy_report::resident_blocks)
      .def_ro("blocks_per_launch", &vox::occupancy_report::blocks_per_launch)
      .def_ro("max_resident_kernels", &vox::occupancy_report::max_resident_kernels)
      .def_ro("concurrent_launches", &vox::occupancy_report::concurrent_launches)
      .def_prop_ro("fills_device", &vox::occupancy_report::fills_device)
      .def("explain", &vox::occupancy_report::explain)
      .def("__str__", &vox::occupancy_report::explain)
      .def("__repr__", [](const vox::occupancy_report& r) {
        return "voxstream.OccupancyReport(blocks_per_launch=" +
               std::to_string(r.blocks_per_launch) +
               ", resident_blocks=" + std::to_string(r.resident_blocks) +
               ", concurrent_launches=" + std::to_string(r.concurrent_launches) + ")";
      });

  m.def("_launch_per_slice", &launch_per_slice, nb::arg("streams"), nb::arg("kernel"),
        nb::arg("grid"), nb::arg("block"), nb::arg("shared_mem"), nb::arg("accesses"),
        nb::arg("params"), nb::arg("graph") = true);
  m.def("_occupancy", &occupancy, nb::arg("kernel"), nb::arg("grid"), nb::arg("block"),
        nb::arg("shared_mem") = 0);
  m.def("_occupancy_report", &vox::make_occupancy_report, nb::arg("blocks_per_sm"),
        nb::arg("sm_count"), nb::arg("blocks_per_launch"), nb::arg("max_resident_kernels") = 128,
        "An occupancy report from given numbers (pure; for tests and the host backend).");

  // bind_testing ran first (module.cpp): the C++ loop of bench/python_overhead.py.
  nb::module_ t = nb::borrow<nb::module_>(m.attr("_testing"));
  t.def("enqueue_loop", &enqueue_loop, nb::arg("op"), nb::arg("input"), nb::arg("out"),
        nb::arg("n"));
  t.def("slice_graph_stats", &slice_graph_stats, nb::arg("streams"));
}

}  // namespace voxpy
