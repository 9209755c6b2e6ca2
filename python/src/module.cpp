// voxstream._voxstream: StreamSet, Volume and the zero-copy exchange of their memory (DLPack,
// the NumPy array interface on the host backend, the CUDA array interface on the cuda backend).
// Ops and file I/O are in ops.cpp. The Python package (python/voxstream) adds the scipy-like
// keyword handling on top.
#include "common.hpp"

#include <array>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <voxstream/config.hpp>
#include <voxstream/core/backend.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/io/format.hpp>
#include <voxstream/io/transfer.hpp>
#include <voxstream/ops/elementwise.hpp>
#include <voxstream/ops/reduce.hpp>
#include <voxstream/volume/access.hpp>

namespace voxpy {

namespace {

// --- DLPack (v0.8 ABI, unversioned "dltensor" capsules) ------------------------------------------
enum dl_device_type : std::int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 };
enum dl_type_code : std::uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2 };
struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

DLDataType dl_dtype(vox::dtype t) {
  switch (t) {
    case vox::dtype::uint8:
      return {kDLUInt, 8, 1};
    case vox::dtype::uint16:
      return {kDLUInt, 16, 1};
    case vox::dtype::int16:
      return {kDLInt, 16, 1};
    case vox::dtype::int32:
      return {kDLInt, 32, 1};
    case vox::dtype::float32:
      return {kDLFloat, 32, 1};
    case vox::dtype::float64:
    default:
      return {kDLFloat, 64, 1};
  }
}

bool from_dl_dtype(DLDataType d, vox::dtype& out) {
  if (d.lanes != 1) return false;
  for (vox::dtype t : {vox::dtype::uint8, vox::dtype::uint16, vox::dtype::int16, vox::dtype::int32,
                       vox::dtype::float32, vox::dtype::float64}) {
    const DLDataType c = dl_dtype(t);
    if (c.code == d.code && c.bits == d.bits) {
      out = t;
      return true;
    }
  }
  return false;
}

/// NumPy typestr ("<f4", "|u1", ...) of a voxel type.
std::string typestr(vox::dtype t) {
  switch (t) {
    case vox::dtype::uint8:
      return "|u1";
    case vox::dtype::uint16:
      return "<u2";
    case vox::dtype::int16:
      return "<i2";
    case vox::dtype::int32:
      return "<i4";
    case vox::dtype::float32:
      return "<f4";
    case vox::dtype::float64:
    default:
      return "<f8";
  }
}

nb::tuple shape_of(const vox::extent3& e) {  // numpy order: (z, y, x)
  return nb::make_tuple(e.z, e.y, e.x);
}

vox::extent3 extent_from(const std::vector<std::int64_t>& shape, const char* op) {
  VOX_EXPECTS(!shape.empty() && shape.size() <= 3, op,
              "a volume has 1 to 3 axes (z, y, x), got " + std::to_string(shape.size()));
  std::array<std::size_t, 3> zyx{1, 1, 1};
  const std::size_t off = 3 - shape.size();
  for (std::size_t i = 0; i < shape.size(); ++i) {
    VOX_EXPECTS(shape[i] > 0, op, "every axis must be longer than 0");
    zyx[off + i] = static_cast<std::size_t>(shape[i]);
  }
  return vox::extent3{zyx[2], zyx[1], zyx[0]};
}

// --- giving wrapped memory back ---------------------------------------------------------------
// A wrapped array is given back to its owner (DLPack deleter, Python reference dropped) only
// once the work queued on the volume's home stream has completed. On the host backend that is
// at once. On CUDA an event recorded on the home stream is polled at later calls into the
// module (no host wait), and every pending release is finished by StreamSet.synchronize().
struct pending_release {
  std::unique_ptr<vox::event> done;
  std::function<void()> give_back;  // runs with the GIL held
};
std::mutex g_pending_mutex;
std::deque<pending_release> g_pending;

/// Whether the work before `e` has completed, without ever disturbing a stream capture: the
/// query runs in relaxed capture mode (a query is not an unsafe call for this thread's capture),
/// and any error (an event recorded inside a capture cannot be queried) counts as "not yet", so
/// the release waits for a later drain or StreamSet.synchronize().
bool release_ready(vox::native_event e) {
#if VOX_BACKEND_CUDA
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  const cudaError_t r = cudaEventQuery(e);
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  if (r != cudaSuccess) (void)cudaGetLastError();  // not ready (or not queryable): not an error
  return r == cudaSuccess;
#else
  (void)e;
  return true;
#endif
}

void drain_pending(bool all_complete) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard<std::mutex> lk(g_pending_mutex);
    for (auto it = g_pending.begin(); it != g_pending.end();) {
      if (all_complete || release_ready(it->done->value())) {
        ready.push_back(std::move(it->give_back));
        it = g_pending.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& f : ready) f();
}

/// The release callback of a wrapping volume: `give_back` after the home stream's work.
std::function<void(vox::stream_view)> releaser(std::function<void()> give_back) {
  return [g = std::move(give_back)](vox::stream_view home) mutable {
    nb::gil_scoped_acquire gil;
#if VOX_BACKEND_CUDA
    try {
      auto e = std::make_unique<vox::event>();
      e->record(home);
      std::lock_guard<std::mutex> lk(g_pending_mutex);
      g_pending.push_back({std::move(e), std::move(g)});
      return;
    } catch (const std::exception&) {
      // Could not record: leak the array rather than free memory still in use.
      return;
    }
#else
    (void)home;
    g();
#endif
  };
}

/// A Volume of type `t` wrapping `data` (the caller ordered the home stream after its producer).
Volume wrap(const std::shared_ptr<vox::stream_set>& set, vox::extent3 e, vox::dtype t, void* data,
            std::function<void()> give_back) {
  drain_pending(false);
  return visit(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return Volume{set, vox::volume<T>(*set, e, static_cast<T*>(data), releaser(give_back))};
  });
}

#if VOX_BACKEND_CUDA
/// Makes native stream `s` wait, on the device, for every access the volume's ledger knows of.
void stream_waits_for(const Volume& v, vox::native_stream s, const char* op) {
  vox::exec::slice_ledger& l = v.ledger();
  std::lock_guard<std::recursive_mutex> lk(l.mutex());
  for (const vox::exec::mark& m : l.outstanding()) {
    if (m.valid()) vox::detail::stream_wait_event(s, m.event->value(), op);
  }
}

/// A DLPack / CUDA-array-interface stream number as a native stream (1: legacy default
/// stream, 2: per-thread default stream, else a cudaStream_t).
vox::native_stream dl_stream(std::intptr_t s) {
  if (s == 1) return cudaStreamLegacy;
  if (s == 2) return cudaStreamPerThread;
  return reinterpret_cast<vox::native_stream>(s);
}
#endif

// --- DLPack export ----------------------------------------------------------------------------
struct export_ctx {
  DLManagedTensor mt{};
  std::int64_t shape[3]{};
  PyObject* owner{nullptr};  // the Volume: its memory lives while the consumer holds the tensor
};

void export_deleter(DLManagedTensor* self) {
  auto* ctx = static_cast<export_ctx*>(self->manager_ctx);
  PyGILState_STATE st = PyGILState_Ensure();
  Py_XDECREF(ctx->owner);
  PyGILState_Release(st);
  delete ctx;
}

void capsule_destructor(PyObject* cap) {
  // Called when the capsule dies; a consumer that took the tensor renamed it "used_dltensor".
  if (PyCapsule_IsValid(cap, "dltensor")) {
    auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
    if (mt != nullptr && mt->deleter != nullptr) mt->deleter(mt);
  } else {
    PyErr_Clear();
  }
}

std::pair<int, int> dlpack_device(const Volume& v) {
#if VOX_BACKEND_CUDA
  return {kDLCUDA, v.set->device()};
#else
  (void)v;
  return {kDLCPU, 0};
#endif
}

nb::object to_dlpack(nb::handle self, nb::object stream, nb::object max_version,
                     nb::object dl_device, nb::object copy) {
  (void)max_version;  // we return an unversioned capsule, which every consumer accepts
  Volume& v = nb::cast<Volume&>(self);
  constexpr const char* op = "Volume.__dlpack__";
  if (!copy.is_none() && nb::cast<bool>(copy)) {
    throw nb::buffer_error("voxstream: Volume.__dlpack__: copy=True is not supported "
                           "(voxstream.copy makes a copy)");
  }
  if (!dl_device.is_none()) {
    auto want = nb::cast<std::pair<int, int>>(dl_device);
    if (want != dlpack_device(v)) {
      throw nb::buffer_error("voxstream: Volume.__dlpack__: the volume is not on dl_device");
    }
  }
  VOX_EXPECTS(v.data() != nullptr, op, "volume is empty");
#if VOX_BACKEND_CUDA
  // The consumer's stream waits on the producer's events: never a host wait.
  std::intptr_t s = stream.is_none() ? 1 : nb::cast<std::intptr_t>(stream);
  VOX_EXPECTS(s != 0, op, "stream 0 is ambiguous in DLPack (use 1 for the legacy default stream)");
  if (s != -1) stream_waits_for(v, dl_stream(s), op);
#else
  VOX_EXPECTS(stream.is_none(), op, "a host (CPU) array takes stream=None");
#endif
  auto* ctx = new export_ctx;
  const vox::extent3 e = v.extent();
  ctx->shape[0] = static_cast<std::int64_t>(e.z);
  ctx->shape[1] = static_cast<std::int64_t>(e.y);
  ctx->shape[2] = static_cast<std::int64_t>(e.x);
  DLTensor& t = ctx->mt.dl_tensor;
  t.data = const_cast<void*>(v.data());
  const auto dev = dlpack_device(v);
  t.device = DLDevice{dev.first, dev.second};
  t.ndim = 3;
  t.dtype = dl_dtype(v.dtype());
  t.shape = ctx->shape;
  t.strides = nullptr;  // compact, C order
  t.byte_offset = 0;
  ctx->mt.manager_ctx = ctx;
  ctx->mt.deleter = export_deleter;
  ctx->owner = self.ptr();
  Py_INCREF(ctx->owner);
  PyObject* cap = PyCapsule_New(&ctx->mt, "dltensor", capsule_destructor);
  if (cap == nullptr) {
    export_deleter(&ctx->mt);
    throw nb::python_error();
  }
  return nb::steal(cap);
}

// --- DLPack import ----------------------------------------------------------------------------
/// Wrapping an array records events and queues releases on the set's home stream, which a
/// stream capture would take into its graph (and a release would later query): refused, before
/// anything is enqueued, while the home stream (stream 0) of the set is capturing.
void expect_not_capturing(const StreamSet& ss, const char* op) {
#if VOX_BACKEND_CUDA
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t r = cudaStreamIsCapturing(ss.set->stream(0).value(), &st);
  if (r != cudaSuccess) (void)cudaGetLastError();
  VOX_EXPECTS(r != cudaSuccess || st == cudaStreamCaptureStatusNone, op,
              "stream 0 of the set is being captured: wrap arrays as Volumes "
              "(voxstream.asvolume) before the capture begins, and use those inside it");
#else
  (void)ss;
  (void)op;
#endif
}

Volume from_dlpack(StreamSet& ss, nb::object x) {
  constexpr const char* op = "voxstream.from_dlpack";
  expect_not_capturing(ss, op);
  auto dev = nb::cast<std::pair<int, int>>(x.attr("__dlpack_device__")());
  nb::object cap;
#if VOX_BACKEND_CUDA
  VOX_EXPECTS(dev.first == kDLCUDA || dev.first == kDLCUDAManaged, op,
              "the array is not in CUDA device memory (use voxstream.asarray to copy it)");
  VOX_EXPECTS(dev.second == ss.set->device(), op,
              "the array is on device " + std::to_string(dev.second) + ", the stream set on " +
                  std::to_string(ss.set->device()));
  // The producer makes our home stream wait for its work (DLPack's stream semantics).
  const auto home = reinterpret_cast<std::intptr_t>(ss.set->stream(0).value());
  cap = x.attr("__dlpack__")(nb::arg("stream") = home);
#else
  VOX_EXPECTS(dev.first == kDLCPU || dev.first == kDLCUDAHost, op,
              "the array is not in host memory (this is the host backend)");
  cap = x.attr("__dlpack__")();
#endif
  auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  if (mt == nullptr) throw nb::python_error();
  PyCapsule_SetName(cap.ptr(), "used_dltensor");  // we own it now
  auto drop = [mt] {
    if (mt->deleter != nullptr) mt->deleter(mt);
  };
  try {
    const DLTensor& t = mt->dl_tensor;
    vox::dtype type{};
    VOX_EXPECTS(from_dl_dtype(t.dtype, type), op,
                "unsupported dtype (voxstream volumes hold uint8, uint16, int16, int32, float32 "
                "or float64)");
    std::vector<std::int64_t> shape(t.shape, t.shape + t.ndim);
    const vox::extent3 e = extent_from(shape, op);
    if (t.strides != nullptr) {
      std::int64_t want = 1;
      for (int i = t.ndim - 1; i >= 0; --i) {
        VOX_EXPECTS(t.shape[i] == 1 || t.strides[i] == want, op,
                    "the array is not C-contiguous (make a contiguous copy first)");
        want *= t.shape[i];
      }
    }
    void* data = static_cast<char*>(t.data) + t.byte_offset;
    return wrap(ss.set, e, type, data, drop);
  } catch (...) {
    drop();
    throw;
  }
}

// --- raw pointers (array interfaces, copies) --------------------------------------------------
/// Wraps `ptr` (an address from __array_interface__ or __cuda_array_interface__) of an array of
/// numpy `shape` and dtype `dtype`, keeping `owner` alive until the memory is given back. On
/// CUDA, `stream` (the interface's stream entry, or None) is waited on by the home stream.
Volume wrap_pointer(StreamSet& ss, std::uintptr_t ptr, const std::vector<std::int64_t>& shape,
                    const std::string& dtype, nb::object owner, nb::object stream) {
  constexpr const char* op = "voxstream.asvolume";
  const vox::extent3 e = extent_from(shape, op);
  VOX_EXPECTS(ptr != 0, op, "the array's data pointer is null");
  expect_not_capturing(ss, op);
#if VOX_BACKEND_CUDA
  if (!stream.is_none()) {
    const auto s = nb::cast<std::intptr_t>(stream);
    VOX_EXPECTS(s != 0, op, "stream 0 is not allowed in __cuda_array_interface__");
    vox::event ev;
    ev.record(vox::stream_view{dl_stream(s)});
    ev.wait_on(ss.set->stream(0));
  }
#else
  VOX_EXPECTS(stream.is_none(), op, "host arrays have no stream");
#endif
  auto* keep = new nb::object(std::move(owner));
  return wrap(ss.set, e, parse_dtype(dtype), reinterpret_cast<void*>(ptr), [keep] { delete keep; });
}

/// Copies a C-contiguous host array at `ptr` into a new volume (pageable upload).
Volume upload(StreamSet& ss, std::uintptr_t ptr, const std::vector<std::int64_t>& shape,
              const std::string& dtype) {
  const vox::extent3 e = extent_from(shape, "voxstream.asarray");
  Volume v = new_volume(ss.set, e, parse_dtype(dtype));
  std::visit(
      [&](auto& vol) {
        using T = typename std::decay_t<decltype(vol)>::value_type;
        nb::gil_scoped_release nogil;
        vox::upload(*ss.set, reinterpret_cast<const T*>(ptr), e.voxels(), vol);
      },
      v.v);
  return v;
}

/// Copies the volume into C-contiguous host memory at `ptr` of `bytes` bytes; blocks until the
/// data is there.
void download(Volume& v, std::uintptr_t ptr, std::size_t bytes) {
  VOX_EXPECTS(bytes == v.bytes(), "Volume.to_numpy", "destination size mismatch");
  std::visit(
      [&](auto& vol) {
        using T = typename std::decay_t<decltype(vol)>::value_type;
        nb::gil_scoped_release nogil;
        vox::download(*v.set, vol, reinterpret_cast<T*>(ptr), vol.size());
      },
      v.v);
}

/// Makes stream `stream` (a CUDA stream number; the owner's stream of a wrapped array) wait for
/// the volume's work. No-op on the host backend.
void hand_back(const Volume& v, nb::object stream) {
#if VOX_BACKEND_CUDA
  if (stream.is_none()) return;
  const auto s = nb::cast<std::intptr_t>(stream);
  if (s == 0 || s == -1) return;
  stream_waits_for(v, dl_stream(s), "voxstream (hand back)");
#else
  (void)v, (void)stream;
#endif
}

nb::dict array_interface(const Volume& v, bool cuda) {
  nb::dict d;
  d["shape"] = shape_of(v.extent());
  d["typestr"] = typestr(v.dtype());
  d["data"] = nb::make_tuple(reinterpret_cast<std::uintptr_t>(v.data()), false);
  d["strides"] = nb::none();
  d["version"] = 3;
  if (cuda) {
#if VOX_BACKEND_CUDA
    // Stream 0 of the set joins every access the ledger knows of; the consumer synchronises
    // with (or enqueues on) that stream, as version 3 of the protocol says.
    vox::exec::join_all(v.ledger(), *v.set->state(0), "Volume.__cuda_array_interface__");
    d["stream"] = reinterpret_cast<std::intptr_t>(v.set->stream(0).value());
#endif
  }
  return d;
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const vox::invalid_argument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const vox::out_of_memory& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const vox::io::io_error& e) {
    PyErr_SetString(PyExc_OSError, e.what());
  } catch (const vox::error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

}  // namespace

Volume new_volume(const std::shared_ptr<vox::stream_set>& set, vox::extent3 e, vox::dtype t) {
  drain_pending(false);
  return visit(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return Volume{set, vox::volume<T>(*set, e)};
  });
}

vox::dtype parse_dtype(const std::string& name) {
  for (vox::dtype t : {vox::dtype::uint8, vox::dtype::uint16, vox::dtype::int16, vox::dtype::int32,
                       vox::dtype::float32, vox::dtype::float64}) {
    if (name == vox::dtype_name(t)) return t;
  }
  VOX_FAIL("voxstream", "unsupported dtype '" + name +
                            "' (voxstream volumes hold uint8, uint16, int16, int32, float32 or "
                            "float64)");
}

// Launching user kernels and occupancy (launch.cpp); the profiling layer (profile.cpp).
void bind_launch(nb::module_& m);
void bind_profile(nb::module_& m);

}  // namespace voxpy

NB_MODULE(_voxstream, m) {
  using namespace voxpy;
  m.doc() = "voxstream: 3D volumes on a stream set with a per-slice dependency ledger";
  m.attr("backend") = vox::backend_name();
  nb::register_exception_translator(translate);
  // Module globals (the default stream set) may outlive interpreter teardown: no leak report.
  nb::set_leak_warnings(false);

  nb::class_<StreamSet>(m, "StreamSet", "N non-blocking streams ordered only by events")
      .def(
          "__init__",
          [](StreamSet* self, std::size_t n) {
            new (self) StreamSet{std::make_shared<vox::stream_set>(n)};
          },
          nb::arg("n") = 4)
      .def("__len__", [](const StreamSet& s) { return s.set->size(); })
      .def(
          "synchronize",
          [](StreamSet& s) {
            {
              nb::gil_scoped_release nogil;
              s.set->synchronize();
            }
            drain_pending(false);
          },
          "Blocks until all work enqueued on the set has completed (events only, no device "
          "sync).")
      .def(
          "stream_ptr",
          [](const StreamSet& s, std::size_t i) {
            return reinterpret_cast<std::uintptr_t>(s.set->stream(i).value());
          },
          nb::arg("i") = 0, "The native handle of stream i (cudaStream_t on CUDA) as an int.")
      .def_prop_ro("device", [](const StreamSet& s) { return s.set->device(); })
      .def("__repr__", [](const StreamSet& s) {
        return "voxstream.StreamSet(" + std::to_string(s.set->size()) + ")";
      });

  nb::class_<Volume>(m, "Volume", "A 3D volume (z, y, x) of one of six voxel types")
      .def(
          "__init__",
          [](Volume* self, StreamSet& ss, std::vector<std::int64_t> shape, const std::string& dt) {
            new (self) Volume(new_volume(ss.set, extent_from(shape, "Volume"), parse_dtype(dt)));
          },
          nb::arg("streams"), nb::arg("shape"), nb::arg("dtype") = "float32",
          "A new zero-filled volume of numpy `shape` (z, y, x) and dtype on `streams`.")
      .def_prop_ro("shape", [](const Volume& v) { return shape_of(v.extent()); })
      .def_prop_ro("_dtype_name", [](const Volume& v) { return vox::dtype_name(v.dtype()); })
      .def_prop_ro("nbytes", &Volume::bytes)
      .def_prop_ro("size", [](const Volume& v) { return v.extent().voxels(); })
      .def_prop_ro("streams", [](const Volume& v) { return StreamSet{v.set}; })
      .def_prop_ro("data_ptr",
                   [](const Volume& v) { return reinterpret_cast<std::uintptr_t>(v.data()); })
      .def_prop_ro("external",
                   [](const Volume& v) {
                     return std::visit([](const auto& x) { return x.external(); }, v.v);
                   })
      .def_prop_rw(
          "spacing",
          [](const Volume& v) {
            const vox::vec3d s = std::visit([](const auto& x) { return x.spacing(); }, v.v);
            return std::make_tuple(s.z, s.y, s.x);
          },
          [](Volume& v, std::tuple<double, double, double> zyx) {
            std::visit(
                [&](auto& x) {
                  x.set_spacing({std::get<2>(zyx), std::get<1>(zyx), std::get<0>(zyx)});
                },
                v.v);
          },
          "Voxel spacing, (z, y, x).")
      .def_prop_rw(
          "origin",
          [](const Volume& v) {
            const vox::vec3d o = std::visit([](const auto& x) { return x.origin(); }, v.v);
            return std::make_tuple(o.z, o.y, o.x);
          },
          [](Volume& v, std::tuple<double, double, double> zyx) {
            std::visit(
                [&](auto& x) {
                  x.set_origin({std::get<2>(zyx), std::get<1>(zyx), std::get<0>(zyx)});
                },
                v.v);
          },
          "Position of voxel (0, 0, 0), (z, y, x).")
      .def("__dlpack__", &to_dlpack, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none())
      .def("__dlpack_device__", [](const Volume& v) { return dlpack_device(v); })
      .def_prop_ro("__array_interface__",
                   [](const Volume& v) {
#if VOX_BACKEND_CUDA
                     (void)v;
                     throw nb::attribute_error("__array_interface__ (device memory: use "
                                               "to_numpy() or __cuda_array_interface__)");
                     return nb::dict();
#else
                     return array_interface(v, false);
#endif
                   })
      .def_prop_ro("__cuda_array_interface__",
                   [](const Volume& v) {
#if VOX_BACKEND_CUDA
                     return array_interface(v, true);
#else
                     (void)v;
                     throw nb::attribute_error(
                         "__cuda_array_interface__ (host backend: use __array_interface__)");
                     return nb::dict();
#endif
                   })
      .def("_download", &download);

  m.def("_from_dlpack", &from_dlpack);
  m.def("_wrap_pointer", &wrap_pointer, nb::arg("streams"), nb::arg("ptr"), nb::arg("shape"),
        nb::arg("dtype"), nb::arg("owner"), nb::arg("stream").none());
  m.def("_upload", &upload);
  m.def("_hand_back", &hand_back, nb::arg("volume"), nb::arg("stream").none());
  m.def("_drain_pending", [] { drain_pending(false); });

  bind_ops(m);
  bind_testing(m);
  bind_segment(m);
  bind_geometry(m);
  bind_stream(m);
  bind_launch(m);
  bind_profile(m);
}
