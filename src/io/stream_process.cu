// vox::stream_process: out-of-core slab streaming (see include/voxstream/io/stream_process.hpp),
// and its sources and sinks: host memory, memory-mapped or decoded files, files written slab by
// slab under a temporary name.
#include <voxstream/io/stream_process.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <voxstream/core/error.hpp>
#include <voxstream/core/macros.hpp>
#include <voxstream/core/stream.hpp>
#include <voxstream/memory/stream_allocator.hpp>
#include <voxstream/volume/access.hpp>

#include <thrust/transform.h>

#include "../detail/cuda_check.hpp"
#include "detail/fail.hpp"
#include "detail/streamed_file.hpp"
#include "../detail/voxel_types.hpp"

namespace vox {

namespace fs = std::filesystem;

namespace detail {
/// The identity, as a Thrust functor (named namespace: it parameterises a kernel).
template <class T>
struct stream_pass_through {
  VOX_HD T operator()(T v) const { return v; }
};
}  // namespace detail

namespace {

constexpr const char* op_name = "stream_process";

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// --- host memory -------------------------------------------------------------------------------

enum class memory_kind { pageable, page_locked, device };

/// What `p` points to, as far as CUDA knows (always pageable on the host backend, where
/// host_volume overloads stand for page-locked memory).
memory_kind kind_of(const void* p) {
#if VOX_BACKEND_CUDA
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: an unknown pointer is plain host memory
    return memory_kind::pageable;
  }
  if (a.type == cudaMemoryTypeHost) return memory_kind::page_locked;
  if (a.type == cudaMemoryTypeDevice) return memory_kind::device;
  return memory_kind::pageable;
#else
  (void)p;
  return memory_kind::pageable;
#endif
}

/// Page-locked, or device memory (rejected), for `bytes` at `p` (its first and last byte).
memory_kind kind_of_range(const void* p, std::size_t bytes) {
  const memory_kind first = kind_of(p);
  if (first != memory_kind::page_locked || bytes <= 1) return first;
  const memory_kind last = kind_of(static_cast<const unsigned char*>(p) + bytes - 1);
  return last == memory_kind::page_locked ? last : memory_kind::pageable;
}

void swap_voxels(void* data, std::size_t count, std::size_t elem) noexcept {
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < count; ++i, p += elem) std::reverse(p, p + elem);
}

/// A read-only private mapping of the voxels of a raw-encoded file.
class mapped_voxels {
 public:
  mapped_voxels(const io::volume_info& info, const char* op) {
    const std::string path = info.data_file.string();
    int fd = -1;
    do {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      const int err = errno;
      VOX_IO_FAIL(op, path, "cannot open: " + std::generic_category().message(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      VOX_IO_FAIL(op, path, "cannot stat: " + std::generic_category().message(err));
    }
    const std::uint64_t end = info.data_offset + info.data_bytes();
    if (end < info.data_offset || static_cast<std::uint64_t>(st.st_size) < end) {
      ::close(fd);
      VOX_IO_FAIL(op, path,
                  "voxel data truncated: " + std::to_string(info.data_bytes()) +
                      " bytes of voxels at offset " + std::to_string(info.data_offset) +
                      ", the file has " + std::to_string(st.st_size) + " bytes");
    }
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t start = info.data_offset / page * page;
    length_ = static_cast<std::size_t>(end - start);
    void* base = ::mmap(nullptr, length_, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(start));
    const int err = errno;
    ::close(fd);  // the mapping keeps the file
    if (base == MAP_FAILED)
      VOX_IO_FAIL(op, path, "cannot map: " + std::generic_category().message(err));
    (void)::madvise(base, length_, MADV_SEQUENTIAL);  // advice only: failure is harmless
    base_ = base;
    data_ = static_cast<const unsigned char*>(base) + (info.data_offset - start);
  }
  ~mapped_voxels() {
    if (base_ != nullptr) ::munmap(base_, length_);
  }
  mapped_voxels(const mapped_voxels&) = delete;
  mapped_voxels& operator=(const mapped_voxels&) = delete;

  [[nodiscard]] const unsigned char* data() const noexcept { return data_; }

 private:
  void* base_{nullptr};
  std::size_t length_{0};
  const unsigned char* data_{nullptr};
};

template <class T>
slab_source<T> source_of(const io::volume_info& info, const char* op) {
  const std::string name = info.header_file.string();
  if (info.type != dtype_of<T>)
    VOX_IO_FAIL(
        op, name,
        std::string("holds ") + dtype_name(info.type) + " voxels, not " + dtype_name(dtype_of<T>));
  io::detail::check_extent(info.extent, info.type, op, name);
  slab_source<T> s;
  s.extent = info.extent;
  s.name = name;
  s.spacing = info.spacing;
  s.origin = info.origin;
  const std::size_t slice_bytes = info.extent.slice_voxels() * sizeof(T);
  const bool mappable =
      info.enc == io::encoding::raw &&
      (info.format == io::file_format::raw || info.format == io::file_format::nrrd ||
       info.format == io::file_format::metaimage);
  if (mappable) {
    auto map = std::make_shared<const mapped_voxels>(info, op);
    const bool swap = info.order != io::native_byte_order && sizeof(T) > 1;
    s.read = [map, slice_bytes, swap](std::size_t z0, std::size_t z1, T* dst) {
      const std::size_t n = (z1 - z0) * slice_bytes;
      std::memcpy(dst, map->data() + z0 * slice_bytes, n);
      if (swap) swap_voxels(dst, n / sizeof(T), sizeof(T));
    };
  } else {
    auto reader = std::make_shared<io::detail::sequential_voxel_reader>(info);
    s.read = [reader, slice_bytes](std::size_t z0, std::size_t z1, T* dst) {
      reader->read(z0, z1 - z0, dst, (z1 - z0) * slice_bytes);
    };
  }
  return s;
}

// --- copies ------------------------------------------------------------------------------------

void copy_async(void* dst, const void* src, std::size_t bytes, bool to_device, stream_view s,
                const char* op) {
#if VOX_BACKEND_CUDA
  VOX_CUDA_TRY(
      cudaMemcpyAsync(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                      s.value()),
      op);
#else
  (void)to_device;
  (void)s;
  (void)op;
  std::memcpy(dst, src, bytes);
#endif
}

/// Device-to-device copy by a kernel (not a copy engine, which the uploads keep busy).
template <class T>
void copy_on_device(T* dst, const T* src, std::size_t n, stream_view s) {
  thrust::transform(detail::make_policy(s), src, src + n, dst, detail::stream_pass_through<T>{});
#if VOX_BACKEND_CUDA
  VOX_CUDA_TRY(cudaPeekAtLastError(), "stream_process halo");
#endif
}

/// Pinned host memory for `n` voxels (none for n == 0).
template <class T>
class pinned_array {
 public:
  pinned_array() = default;
  explicit pinned_array(std::size_t n)
      : p_(n == 0 ? nullptr : static_cast<T*>(detail::allocate_pinned(n * sizeof(T), op_name))) {}
  ~pinned_array() { detail::free_pinned(p_); }
  pinned_array(const pinned_array&) = delete;
  pinned_array& operator=(const pinned_array&) = delete;
  [[nodiscard]] T* get() const noexcept { return p_; }

 private:
  T* p_{nullptr};
};

// --- the plan ----------------------------------------------------------------------------------

/// Slab k: output slices `out` from input slices `in` ([a, b)); input slices [a, fresh) are on
/// the device already (in the previous slab's buffer), [fresh, b) come from the source.
struct slab_step {
  z_range out;
  z_range in;
  std::size_t fresh{0};
};

/// The output slices [z0, z1) of each slab along z (see vox::slab_ranges; `depth` <= slices):
/// `depth` each, one slab what remains. With `ramp`, when the volume holds at least four slabs
/// of depth >= 4, the first two slabs are a quarter and a half of `depth` and the last two a
/// half and a quarter: the first download starts after a thin slab's upload and compute instead
/// of a full one's, and the last one, which nothing overlaps, is short.
std::vector<z_range> plan_ranges(std::size_t slices, std::size_t depth, bool ramp) {
  std::vector<z_range> r;
  if (slices == 0 || depth == 0) return r;
  const std::size_t quarter = (depth + 3) / 4, half = (depth + 1) / 2;
  const bool ends = ramp && depth >= 4 && slices >= 4 * depth;
  const std::size_t edge = ends ? quarter + half : 0;  // slices in each end's ramp
  std::size_t z0 = 0;
  const auto add = [&](std::size_t d) {
    r.push_back({z0, z0 + d});
    z0 += d;
  };
  if (ends) {
    add(quarter);
    add(half);
  }
  while (z0 < slices - edge) add(std::min(depth, slices - edge - z0));
  if (ends) {
    add(half);
    add(quarter);
  }
  return r;
}

std::vector<slab_step> make_steps(std::size_t slices, std::size_t depth, std::size_t halo,
                                  bool ramp) {
  std::vector<slab_step> steps;
  std::size_t prev_b = 0;
  for (const z_range& o : plan_ranges(slices, depth, ramp)) {
    slab_step s;
    s.out = o;
    s.in = {o.z0 > halo ? o.z0 - halo : 0, std::min(slices, o.z1 + halo)};
    s.fresh = std::max(s.in.z0, prev_b);
    prev_b = s.in.z1;
    steps.push_back(s);
  }
  return steps;
}

/// Slabs and the deepest slab input (halo included) of the plan for `depth`.
struct slab_shape {
  std::size_t slabs{0};
  std::size_t max_input{0};
};

slab_shape shape_of(std::size_t slices, std::size_t depth, std::size_t halo, bool ramp) {
  const std::vector<slab_step> steps = make_steps(slices, depth, halo, ramp);
  slab_shape r;
  r.slabs = steps.size();
  for (const slab_step& st : steps) r.max_input = std::max(r.max_input, st.in.depth());
  return r;
}

/// a * b * c, saturated at the largest std::size_t.
std::size_t saturating_product(std::size_t a, std::size_t b, std::size_t c) {
  constexpr std::size_t top = std::numeric_limits<std::size_t>::max();
  if (a != 0 && b > top / a) return top;
  const std::size_t ab = a * b;
  if (ab != 0 && c > top / ab) return top;
  return ab * c;
}

// --- the ring ----------------------------------------------------------------------------------

template <class In, class Out>
struct ring_slot {
  ring_slot(stream_set& streams, const extent3& cap, std::size_t hin_voxels,
            std::size_t hout_voxels)
      : din(streams, cap), dout(streams, cap), hin(hin_voxels), hout(hout_voxels) {}

  volume<In> din;
  volume<Out> dout;
  pinned_array<In> hin;    // staged source slices (none for a page-locked source)
  pinned_array<Out> hout;  // staged result slices (none for a page-locked sink)
  event uploaded;          // after the last upload that read hin (or the source's memory)
  event downloaded;        // after the last download into hout (or the sink's memory)
  bool upload_pending{false};
  bool download_pending{false};
};

/// The slab buffers. Destruction first waits for every copy in flight that touches host memory
/// (the ring's, the source's, the sink's), then frees; the device buffers free stream-ordered.
template <class In, class Out>
class ring {
 public:
  ring() = default;
  ~ring() { drain(); }
  ring(const ring&) = delete;
  ring& operator=(const ring&) = delete;

  /// Blocks the host until no copy of the ring is in flight. Never throws.
  void drain() noexcept {
    for (auto& s : slots) {
      wait(s->uploaded, s->upload_pending);
      wait(s->downloaded, s->download_pending);
    }
  }

  std::vector<std::unique_ptr<ring_slot<In, Out>>> slots;

 private:
  static void wait(const event& e, bool& pending) noexcept {
    if (!pending) return;
    try {
      e.synchronize();  // VOX_ALLOW_SYNC: a copy must not outlive its host buffer
    } catch (const std::exception& ex) {
      detail::log_error(op_name, ex.what());
    }
    pending = false;
  }
};

}  // namespace

// --- sources and sinks -------------------------------------------------------------------------

namespace {
// The checks host_source and host_sink share; returns where `data` lives (device memory is
// refused with `device_hint`).
template <class T>
memory_kind check_host_range(const char* op, const T* data, std::size_t count, extent3 e,
                             const char* device_hint) {
  VOX_EXPECTS(!e.empty(), op, "empty extent " + e.str());
  checked_voxels(e, sizeof(T), op);
  VOX_EXPECTS(data != nullptr, op, "data is null");
  VOX_EXPECTS(count == e.voxels(), op,
              "holds " + std::to_string(count) + " voxels but the extent " + e.str() + " has " +
                  std::to_string(e.voxels()));
  const memory_kind kind = kind_of_range(data, count * sizeof(T));
  VOX_EXPECTS(kind != memory_kind::device, op, std::string("data is device memory: ") + device_hint);
  return kind;
}
}  // namespace

template <class T>
slab_source<T> host_source(const T* data, std::size_t count, extent3 e) {
  const memory_kind kind = check_host_range("host_source", data, count, e,
                                             "upload a vox::volume instead of streaming it");
  slab_source<T> s;
  s.extent = e;
  s.name = "host memory";
  const std::size_t slice = e.slice_voxels();
  s.read = [data, slice](std::size_t z0, std::size_t z1, T* dst) {
    std::memcpy(dst, data + z0 * slice, (z1 - z0) * slice * sizeof(T));
  };
  if (kind == memory_kind::page_locked) s.pinned = data;
  return s;
}

template <class T>
slab_source<T> host_source(const host_volume<T>& v) {
  VOX_EXPECTS(!v.empty(), "host_source", "the host volume is empty");
  v.synchronize();
  slab_source<T> s = host_source(v.data(), v.size(), v.extent());
  s.name = "pinned host volume";
  s.pinned = v.data();
  return s;
}

template <class T>
slab_source<T> file_source(const fs::path& path) {
  return source_of<T>(io::probe(path), "file_source");
}

template <class T>
slab_source<T> raw_file_source(const fs::path& path, const io::raw_layout& layout) {
  return source_of<T>(io::raw_info(path, layout), "raw_file_source");
}

template <class T>
slab_sink<T> host_sink(T* data, std::size_t count, extent3 e) {
  const memory_kind kind =
      check_host_range("host_sink", data, count, e,
                       "process a vox::volume instead of streaming into it");
  slab_sink<T> s;
  s.extent = e;
  s.name = "host memory";
  const std::size_t slice = e.slice_voxels();
  s.write = [data, slice](std::size_t z0, std::size_t z1, const T* src) {
    std::memcpy(data + z0 * slice, src, (z1 - z0) * slice * sizeof(T));
  };
  if (kind == memory_kind::page_locked) s.pinned = data;
  return s;
}

template <class T>
slab_sink<T> host_sink(host_volume<T>& v) {
  VOX_EXPECTS(!v.empty(), "host_sink", "the host volume is empty");
  v.synchronize();
  slab_sink<T> s = host_sink(v.data(), v.size(), v.extent());
  s.name = "pinned host volume";
  s.pinned = v.data();
  return s;
}

template <class T>
slab_sink<T> file_sink(const fs::path& path, extent3 e, const io::write_options& opt) {
  auto file = std::make_shared<io::detail::streamed_file_writer>(path, e, dtype_of<T>, opt);
  auto next = std::make_shared<std::size_t>(0);  // the next slice expected
  slab_sink<T> s;
  s.extent = e;
  s.name = path.string();
  const std::size_t slice = e.slice_voxels();
  s.write = [file, next, slice, name = s.name](std::size_t z0, std::size_t z1, const T* src) {
    VOX_EXPECTS(z0 == *next && z1 > z0, "file_sink",
                "'" + name + "': slices [" + std::to_string(z0) + ", " + std::to_string(z1) +
                    ") arrive out of order; slice " + std::to_string(*next) + " comes next");
    file->append(src, (z1 - z0) * slice * sizeof(T));
    *next = z1;
  };
  s.finish = [file] { file->commit(); };
  s.abort = [file] { file->discard(); };
  return s;
}

std::vector<z_range> slab_ranges(std::size_t slices, std::size_t slab_depth, bool ramp) {
  VOX_EXPECTS(slab_depth >= 1, "slab_ranges", "slab_depth must be at least 1 slice");
  return plan_ranges(slices, std::min(slab_depth, slices), ramp);
}

// --- stream_process ------------------------------------------------------------------------------

template <class In, class Out>
stream_report stream_process(const slab_source<In>& source, slab_sink<Out>& sink,
                             std::size_t slab_depth, std::size_t halo,
                             const slab_pipeline_at<In, Out>& pipeline, stream_set& streams,
                             const stream_options& opts) {
  constexpr const char* op = op_name;
  const auto started = std::chrono::steady_clock::now();
  const extent3 e = source.extent;
  const std::string src_name = "the source '" + (source.name.empty() ? "?" : source.name) + "'";
  const std::string dst_name = "the sink '" + (sink.name.empty() ? "?" : sink.name) + "'";

  // 1. Arguments, before anything is allocated or enqueued.
  VOX_EXPECTS(!e.empty(), op, src_name + " is empty (extent " + e.str() + ")");
  checked_voxels(e, std::max(sizeof(In), sizeof(Out)), op);
  VOX_EXPECTS(static_cast<bool>(source.read) || source.pinned != nullptr, op,
              src_name + " has neither a read function nor pinned data");
  VOX_EXPECTS(
      sink.extent == e, op,
      dst_name + " has extent " + sink.extent.str() + " but " + src_name + " has " + e.str());
  VOX_EXPECTS(slab_depth >= 1, op, "slab_depth must be at least 1 slice");
  VOX_EXPECTS(halo <= e.z, op,
              "halo of " + std::to_string(halo) + " slices is wider than the volume (" +
                  std::to_string(e.z) + " slices)");
  VOX_EXPECTS(static_cast<bool>(pipeline), op, "the pipeline is empty");
  VOX_EXPECTS(opts.buffers >= 2, op,
              "buffers must be at least 2 (one slab uploads while another downloads), got " +
                  std::to_string(opts.buffers));

  // 2. The slab depth that fits the budget.
  const std::size_t slice = e.slice_voxels();
  const std::size_t slice_bytes = slice * (sizeof(In) + sizeof(Out));
  std::size_t depth = std::min(slab_depth, e.z);
  slab_shape shape = shape_of(e.z, depth, halo, opts.ramp);
  std::size_t buffers = std::min(opts.buffers, shape.slabs);
  std::size_t device_bytes = saturating_product(buffers, shape.max_input, slice_bytes);
  if (opts.device_budget_bytes != 0) {
    // The deepest slab that fits. Not a formula: near the volume's ends the halo is clamped,
    // and fewer slabs may need fewer buffers. At most slices x log(slices) steps in all.
    while (device_bytes > opts.device_budget_bytes && depth > 1) {
      --depth;
      shape = shape_of(e.z, depth, halo, opts.ramp);
      buffers = std::min(opts.buffers, shape.slabs);
      device_bytes = saturating_product(buffers, shape.max_input, slice_bytes);
    }
    if (device_bytes > opts.device_budget_bytes)
      detail::throw_out_of_memory(
          op,
          "a device budget of " + mib(opts.device_budget_bytes) + " cannot hold " +
              std::to_string(buffers) + " slab buffers of 1 slice plus a halo of " +
              std::to_string(halo) + " slices either side (" + std::to_string(shape.max_input) +
              " slices of " + std::to_string(e.x) + "x" + std::to_string(e.y) + ", " +
              dtype_name(dtype_of<In>) + " in and " + dtype_name(dtype_of<Out>) +
              " out): that needs " + mib(device_bytes),
          __FILE__, __LINE__);
  }
  const std::vector<slab_step> steps = make_steps(e.z, depth, halo, opts.ramp);
  const std::size_t slabs = steps.size();
  std::size_t fresh_max = 0;
  for (const auto& s : steps) fresh_max = std::max(fresh_max, s.in.z1 - s.fresh);

  // 3. Everything allocated up front: streams, device buffers, pinned buffers, events.
  const bool staged_in = source.pinned == nullptr;
  const bool discard = sink.pinned == nullptr && !sink.write;  // nothing to download
  const bool staged_out = sink.pinned == nullptr && !discard;
  stream_set_options side;
  side.staging_buffers = 0;
  side.staging_bytes = 0;
  stream_set up(1, side);    // host-to-device copies
  stream_set down(1, side);  // device-to-host copies
  const extent3 cap{e.x, e.y, shape.max_input};
  ring<In, Out> r;
  r.slots.reserve(buffers);
  for (std::size_t i = 0; i < buffers; ++i) {
    r.slots.push_back(std::make_unique<ring_slot<In, Out>>(
        streams, cap, staged_in ? fresh_max * slice : 0, staged_out ? depth * slice : 0));
  }

  stream_report rep;
  rep.slabs = slabs;
  rep.slab_depth = depth;
  rep.buffers = buffers;
  rep.device_bytes = device_bytes;
  rep.pinned_bytes = buffers * ((staged_in ? fresh_max * slice * sizeof(In) : 0) +
                                (staged_out ? depth * slice * sizeof(Out) : 0));

  // 4. The slabs.
  std::size_t done = 0;
  // Hands slab k's result to the sink once its download has completed (host wait).
  const auto retire = [&](std::size_t k) {
    ring_slot<In, Out>& s = *r.slots[k % buffers];
    if (s.download_pending) {
      s.downloaded.synchronize();  // VOX_ALLOW_SYNC: the sink needs the slab on the host
      s.download_pending = false;
    }
    if (staged_out) sink.write(steps[k].out.z0, steps[k].out.z1, s.hout.get());
    ++done;
    if (opts.progress) opts.progress(done, slabs);
  };

  try {
    for (std::size_t k = 0; k < slabs; ++k) {
      const slab_step& st = steps[k];
      ring_slot<In, Out>& s = *r.slots[k % buffers];
      if (k >= buffers) retire(k - buffers);  // frees this slot's pinned output buffer

      // Source slices into the pinned buffer, once the upload that last read it has completed.
      const std::size_t fresh = st.in.z1 - st.fresh;
      if (staged_in && fresh > 0) {
        if (s.upload_pending) {
          s.uploaded.synchronize();  // VOX_ALLOW_SYNC: the source refills this pinned buffer
          s.upload_pending = false;
        }
        source.read(st.fresh, st.in.z1, s.hin.get());
      }

      // The device buffers take this slab's shape (a no-op except near the volume's ends).
      const extent3 se{e.x, e.y, st.in.depth()};
      s.din.reshape(up, se);
      s.dout.reshape(up, se);

      // Input slices shared with the previous slab: device to device, on the set's first stream.
      if (st.fresh > st.in.z0) {
        const ring_slot<In, Out>& p = *r.slots[(k - 1) % buffers];
        const In* from = p.din.data() + (st.in.z0 - steps[k - 1].in.z0) * slice;
        In* to = s.din.data();
        const std::size_t n = (st.fresh - st.in.z0) * slice;
        exec::run_op(streams, "stream_process halo", {slab{0, 0, st.fresh - st.in.z0}},
                     {read_all(p.din), write(s.din)},
                     [&](stream_view sv, const slab&) { copy_on_device(to, from, n, sv); });
      }

      // The other input slices: host to device on the upload stream.
      if (fresh > 0) {
        const In* from = staged_in ? s.hin.get() : source.pinned + st.fresh * slice;
        In* to = s.din.data() + (st.fresh - st.in.z0) * slice;
        const std::size_t bytes = fresh * slice * sizeof(In);
        exec::run_op(up, "stream_process upload",
                     {slab{0, st.fresh - st.in.z0, st.in.depth()}},
                     {write(s.din)}, [&](stream_view sv, const slab&) {
                       copy_async(to, from, bytes, true, sv, "stream_process upload");
                     });
        s.uploaded.record(up.stream(0));
        s.upload_pending = true;
        rep.bytes_uploaded += bytes;
      }

      pipeline(streams, s.din, s.dout, slab_position{k, slabs, st.out, st.in});
      VOX_EXPECTS(s.dout.extent() == se, op,
                  "the pipeline replaced its output volume (extent " + s.dout.extent().str() +
                      ", expected " + se.str() + "): write into `out` instead");

      // The slab's own output slices: device to host on the download stream. For a sink that
      // discards them, the download stream only joins the pipeline: its event then says when
      // the slab is done (progress, and the pace of the ring).
      {
        const Out* from = s.dout.data() + (st.out.z0 - st.in.z0) * slice;
        Out* to = discard ? nullptr : staged_out ? s.hout.get() : sink.pinned + st.out.z0 * slice;
        const std::size_t bytes = discard ? 0 : st.out.depth() * slice * sizeof(Out);
        exec::run_op(down, "stream_process download",
                     {slab{0, st.out.z0 - st.in.z0, st.out.z1 - st.in.z0}}, {read(s.dout)}, [&](stream_view sv, const slab&) {
                       if (bytes > 0)
                         copy_async(to, from, bytes, false, sv, "stream_process download");
                     });
        s.downloaded.record(down.stream(0));
        s.download_pending = true;
        rep.bytes_downloaded += bytes;
      }
    }
    for (std::size_t k = slabs > buffers ? slabs - buffers : 0; k < slabs; ++k) retire(k);
    r.drain();
    if (sink.finish) sink.finish();
  } catch (...) {
    r.drain();
    if (sink.abort) {
      try {
        sink.abort();
      } catch (const std::exception& ex) {
        detail::log_error(op, std::string("the sink's abort() failed: ") + ex.what());
      }
    }
    throw;
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return rep;
}

// --- instantiations ----------------------------------------------------------------------------

template <class In, class Out>
stream_report stream_process(const slab_source<In>& source, slab_sink<Out>& sink,
                             std::size_t slab_depth, std::size_t halo,
                             const slab_pipeline<In, Out>& pipeline, stream_set& streams,
                             const stream_options& opts) {
  // An empty pipeline stays empty, so that the checks name it.
  slab_pipeline_at<In, Out> at;
  if (pipeline) {
    at = [&pipeline](stream_set& ss, const volume<In>& in, volume<Out>& out,
                     const slab_position&) { pipeline(ss, in, out); };
  }
  return stream_process<In, Out>(source, sink, slab_depth, halo, at, streams, opts);
}

#define VOX_STREAM_ENDPOINTS(T)                                                       \
  template slab_source<T> host_source<T>(const T*, std::size_t, extent3);             \
  template slab_source<T> host_source<T>(const host_volume<T>&);                      \
  template slab_source<T> file_source<T>(const fs::path&);                            \
  template slab_source<T> raw_file_source<T>(const fs::path&, const io::raw_layout&); \
  template slab_sink<T> host_sink<T>(T*, std::size_t, extent3);                       \
  template slab_sink<T> host_sink<T>(host_volume<T>&);                                \
  template slab_sink<T> file_sink<T>(const fs::path&, extent3, const io::write_options&);
VOX_FOR_EACH_VOXEL_TYPE(VOX_STREAM_ENDPOINTS)
#undef VOX_STREAM_ENDPOINTS

#define VOX_STREAM_PROCESS(In, Out)                                        \
  template stream_report stream_process<In, Out>(                          \
      const slab_source<In>&, slab_sink<Out>&, std::size_t, std::size_t,   \
      const slab_pipeline<In, Out>&, stream_set&, const stream_options&);  \
  template stream_report stream_process<In, Out>(                          \
      const slab_source<In>&, slab_sink<Out>&, std::size_t, std::size_t,   \
      const slab_pipeline_at<In, Out>&, stream_set&, const stream_options&);
// In -> In, In -> float, In -> double, In -> uint8 (each pair once).
VOX_STREAM_PROCESS(std::uint8_t, std::uint8_t)
VOX_STREAM_PROCESS(std::uint8_t, float)
VOX_STREAM_PROCESS(std::uint8_t, double)
VOX_STREAM_PROCESS(std::uint16_t, std::uint16_t)
VOX_STREAM_PROCESS(std::uint16_t, float)
VOX_STREAM_PROCESS(std::uint16_t, double)
VOX_STREAM_PROCESS(std::uint16_t, std::uint8_t)
VOX_STREAM_PROCESS(std::int16_t, std::int16_t)
VOX_STREAM_PROCESS(std::int16_t, float)
VOX_STREAM_PROCESS(std::int16_t, double)
VOX_STREAM_PROCESS(std::int16_t, std::uint8_t)
VOX_STREAM_PROCESS(std::int32_t, std::int32_t)
VOX_STREAM_PROCESS(std::int32_t, float)
VOX_STREAM_PROCESS(std::int32_t, double)
VOX_STREAM_PROCESS(std::int32_t, std::uint8_t)
VOX_STREAM_PROCESS(float, float)
VOX_STREAM_PROCESS(float, double)
VOX_STREAM_PROCESS(float, std::uint8_t)
VOX_STREAM_PROCESS(double, double)
VOX_STREAM_PROCESS(double, float)
VOX_STREAM_PROCESS(double, std::uint8_t)
#undef VOX_STREAM_PROCESS

}  // namespace vox
