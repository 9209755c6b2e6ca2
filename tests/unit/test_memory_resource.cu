// vox::memory_resource: volumes, device buffers and allocators allocate and free through the
// resource they were given (or the current one), on the right stream and with matching sizes;
// the current resource is process-wide and thread-safe; a resource's out_of_memory reaches the
// caller with nothing half-built. CUDA: stream_view converts to and from cuda::stream_ref.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/voxstream.hpp>

#include "../../src/ops/detail/scratch_volume.hpp"
#include "../../src/exec/stream_cache.hpp"
#include "../../src/memory/detail/counters.hpp"
#include "../common/volumes.hpp"

namespace voxtest_mr {

/// Forwards to the pool and records every live allocation with its size and stream.
class counting_resource final : public vox::memory_resource {
 public:
  struct record {
    std::size_t bytes;
    vox::native_stream stream;
  };
  std::size_t allocations() const { return allocs_.load(); }
  std::size_t frees() const { return frees_.load(); }
  std::size_t live() const {
    std::lock_guard<std::mutex> l(m_);
    return live_.size();
  }
  std::size_t mismatches() const { return mismatches_.load(); }

 private:
  void* do_allocate(std::size_t bytes, vox::stream_view s) override {
    void* p = vox::pool_memory_resource().allocate(bytes, s);
    std::lock_guard<std::mutex> l(m_);
    live_[p] = record{bytes, s.value()};
    ++allocs_;
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, vox::stream_view s) noexcept override {
    {
      std::lock_guard<std::mutex> l(m_);
      auto it = live_.find(p);
      if (it == live_.end() || it->second.bytes != bytes || it->second.stream != s.value())
        ++mismatches_;
      if (it != live_.end()) live_.erase(it);
      ++frees_;
    }
    vox::pool_memory_resource().deallocate(p, bytes, s);
  }
  mutable std::mutex m_;
  std::map<void*, record> live_;
  std::atomic<std::size_t> allocs_{0};
  std::atomic<std::size_t> frees_{0};
  std::atomic<std::size_t> mismatches_{0};
};

/// Refuses every request, as an exhausted arena would.
class empty_resource final : public vox::memory_resource {
  void* do_allocate(std::size_t, vox::stream_view) override {
    throw vox::out_of_memory("empty_resource: no memory left");
  }
  void do_deallocate(void*, std::size_t, vox::stream_view) noexcept override {}
};

/// Restores the pool as the current resource when a test ends, however it ends.
struct current_guard {
  ~current_guard() { vox::set_current_memory_resource(nullptr); }
};

TEST(MemoryResource, DefaultIsThePool) {
  current_guard g;
  EXPECT_TRUE(vox::current_memory_resource().is_equal(vox::pool_memory_resource()));
  vox::stream_set s(2);
  vox::volume<float> v(s, vox::extent3{8, 4, 3});
  EXPECT_EQ(&v.resource(), &vox::pool_memory_resource());
  vox::device_buffer<int> b(16, s.stream(0));
  EXPECT_EQ(&b.resource(), &vox::pool_memory_resource());
}

TEST(MemoryResource, VolumeAllocatesAndFreesThroughItsResource) {
  counting_resource mr;
  {
    vox::stream_set s(3);
    vox::volume<std::uint16_t> v(s, vox::extent3{17, 5, 7}, std::uint16_t{41}, mr);
    EXPECT_EQ(&v.resource(), &mr);
    EXPECT_EQ(mr.allocations(), 1u);
    EXPECT_EQ(mr.live(), 1u);
    // The volume is usable as any other: filled with 41, then copied by an op.
    vox::volume<std::uint16_t> w(s, v.extent(), mr);
    vox::copy(s, v, w);
    const auto h = vox_test::fetch(s, w, std::uint16_t{7});
    ASSERT_EQ(h.size(), v.size());
    for (auto x : h) ASSERT_EQ(x, 41);
    // Moving a volume moves its resource with it.
    vox::volume<std::uint16_t> moved(std::move(w));
    EXPECT_EQ(&moved.resource(), &mr);
    EXPECT_EQ(mr.allocations(), 2u);
  }
  EXPECT_EQ(mr.live(), 0u);
  EXPECT_EQ(mr.frees(), 2u);
  EXPECT_EQ(mr.mismatches(), 0u) << "freed with another size or stream than allocated";
}

TEST(MemoryResource, DeviceBufferAndAllocator) {
  counting_resource mr;
  vox::stream_set s(2);
  {
    vox::device_buffer<double> b(100, s.stream(1), mr);
    EXPECT_EQ(b.bytes(), 800u);
    EXPECT_EQ(mr.live(), 1u);
    vox::device_buffer<double> c(std::move(b));
    EXPECT_EQ(&c.resource(), &mr);
    vox::device_buffer<double> d(4, s.stream(0));  // the pool
    d = std::move(c);                            // frees d's pool memory, takes c's
    EXPECT_EQ(&d.resource(), &mr);
    EXPECT_EQ(mr.live(), 1u);
  }
  EXPECT_EQ(mr.live(), 0u);
  vox::stream_allocator<int> a(s.stream(0), mr);
  vox::stream_allocator<float> rebound(a);
  EXPECT_EQ(&rebound.resource(), &mr);
  EXPECT_TRUE(a == rebound);
  EXPECT_FALSE(a == vox::stream_allocator<int>(s.stream(0)));  // another resource
  auto p = rebound.allocate(10);
  EXPECT_EQ(mr.live(), 1u);
  rebound.deallocate(p, 10);
  EXPECT_EQ(mr.live(), 0u);
  EXPECT_EQ(mr.mismatches(), 0u);
}

TEST(MemoryResource, CurrentResourceIsUsedWhenNoneIsGiven) {
  current_guard g;
  counting_resource mr;
  vox::stream_set s(2);
  vox::volume<float> before(s, vox::extent3{4, 4, 4});
  EXPECT_EQ(vox::set_current_memory_resource(&mr), &vox::pool_memory_resource());
  {
    vox::volume<float> v(s, vox::extent3{4, 4, 4});
    vox::device_buffer<char> b(3, s.stream(0));
    EXPECT_EQ(&v.resource(), &mr);
    EXPECT_EQ(mr.live(), 2u);
    // An op's scratch comes from the current resource too, and is given back.
    vox::volume<float> out(s, v.extent());
    vox::gaussian(s, v, out, vox::sigma3(1.5));
    s.synchronize();
  }
  EXPECT_EQ(mr.live(), 0u);
  EXPECT_EQ(&before.resource(), &vox::pool_memory_resource()) << "existing volumes keep theirs";
  EXPECT_EQ(vox::set_current_memory_resource(nullptr), &mr);
  EXPECT_EQ(&vox::current_memory_resource(), &vox::pool_memory_resource());
  EXPECT_EQ(mr.mismatches(), 0u);
}

TEST(MemoryResource, ExhaustedResourceThrowsOutOfMemory) {
  empty_resource mr;
  vox::stream_set s(2);
  EXPECT_THROW((vox::volume<float>(s, vox::extent3{8, 8, 8}, mr)), vox::out_of_memory);
  EXPECT_THROW((vox::device_buffer<float>(8, s.stream(0), mr)), vox::out_of_memory);
  // Zero bytes never reach the resource.
  vox::device_buffer<float> none(0, s.stream(0), mr);
  EXPECT_EQ(none.data(), nullptr);
  // The library stays usable.
  vox::volume<float> ok(s, vox::extent3{8, 8, 8}, 2.0f);
  EXPECT_EQ(vox_test::fetch(s, ok)[511], 2.0f);
}

TEST(MemoryResource, ThreadsShareOneResource) {
  counting_resource mr;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&mr, t] {
      vox::stream_set s(2);
      for (int i = 0; i < 20; ++i) {
        vox::volume<std::int32_t> v(s, vox::extent3{9, 7, 1 + static_cast<std::size_t>(i % 5)},
                                    t, mr);
        vox::device_buffer<std::uint8_t> b(64 + i, s.stream(i % 2), mr);
      }
      s.synchronize();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mr.allocations(), 160u);
  EXPECT_EQ(mr.live(), 0u);
  EXPECT_EQ(mr.mismatches(), 0u);
}

// --- the per-stream caches of ops' scratch and result slots (src/exec/stream_cache.hpp) ---------

std::size_t pool_allocations() { return vox::detail::counters().allocations.load(); }
std::size_t pool_frees() { return vox::detail::counters().frees.load(); }

TEST(StreamCache, ResultSlotsAreReusedOnTheirStream) {
  vox::stream_set s(2);
  const vox::stream_view s0 = s.stream(0), s1 = s.stream(1);
  vox::memory_resource& slots = vox::detail::result_slot_resource();
  void* a = slots.allocate(56, s0);
  const std::size_t before = pool_allocations();
  slots.deallocate(a, 56, s0);
  void* b = slots.allocate(8, s0);
  EXPECT_EQ(b, a) << "a freed slot is the next one on its stream";
  EXPECT_EQ(pool_allocations(), before);
  void* c = slots.allocate(8, s1);  // another stream has its own slots
  EXPECT_NE(c, b);
  EXPECT_EQ(vox::detail::cache_stats(s0.value()).slot_chunks, 1u);
  EXPECT_EQ(vox::detail::cache_stats(s1.value()).slot_chunks, 1u);
  slots.deallocate(b, 8, s0);
  slots.deallocate(c, 8, s1);
  // Over a slot's size: the pool, not the cache.
  void* big = slots.allocate(vox::detail::result_slot_bytes + 1, s0);
  EXPECT_EQ(pool_allocations(), before + 2);
  slots.deallocate(big, vox::detail::result_slot_bytes + 1, s0);
  EXPECT_EQ(vox::detail::cache_stats(s0.value()).free_slots,
            vox::detail::result_slots_per_chunk);
}

TEST(StreamCache, ManyOutstandingSlotsTakeMoreChunksThenAreReused) {
  vox::stream_set s(1);
  const vox::stream_view s0 = s.stream(0);
  vox::memory_resource& slots = vox::detail::result_slot_resource();
  const std::size_t n = 2 * vox::detail::result_slots_per_chunk + 5;  // exhausts two chunks
  std::vector<void*> held;
  for (std::size_t i = 0; i < n; ++i) held.push_back(slots.allocate(40, s0));
  std::vector<void*> sorted = held;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end()) << "slots are distinct";
  EXPECT_EQ(vox::detail::cache_stats(s0.value()).slot_chunks, 3u);
  for (void* p : held) slots.deallocate(p, 40, s0);
  EXPECT_EQ(vox::detail::cache_stats(s0.value()).free_slots,
            3 * vox::detail::result_slots_per_chunk);
  const std::size_t before = pool_allocations();
  for (std::size_t i = 0; i < n; ++i) held[i] = slots.allocate(40, s0);
  EXPECT_EQ(pool_allocations(), before) << "no new chunk once enough were made";
  for (void* p : held) slots.deallocate(p, 40, s0);
}

TEST(StreamCache, ScratchGrowsOnlyWhenTooSmallAndKeepsItsHeadZero) {
  vox::stream_set s(1);
  const vox::stream_view s0 = s.stream(0);
  auto* p = static_cast<unsigned char*>(vox::detail::stream_scratch(s0, 100, "test"));
  EXPECT_EQ(vox::detail::cache_stats(s0.value()).scratch_allocations, 1u);
  EXPECT_GE(vox::detail::cache_stats(s0.value()).scratch_bytes, 100u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
#if !VOX_BACKEND_CUDA
  for (std::size_t i = 0; i < vox::detail::scratch_head_bytes; ++i) ASSERT_EQ(p[i], 0) << i;
#endif
  EXPECT_EQ(vox::detail::stream_scratch(s0, 64, "test"), p) << "big enough: the same scratch";
  EXPECT_EQ(vox::detail::cache_stats(s0.value()).scratch_allocations, 1u);
  const std::size_t frees = pool_frees();
  void* q = vox::detail::stream_scratch(s0, 100000, "test");
  EXPECT_EQ(vox::detail::cache_stats(s0.value()).scratch_allocations, 2u);
  EXPECT_GE(vox::detail::cache_stats(s0.value()).scratch_bytes, 100000u);
  EXPECT_EQ(pool_frees(), frees + 1) << "the old scratch went back, stream-ordered";
  EXPECT_EQ(vox::detail::stream_scratch(s0, 100, "test"), q);
}

TEST(StreamCache, ReleasedWithTheSetsStreams) {
  const std::size_t streams_before = vox::detail::cached_streams();
  const std::size_t frees_before = pool_frees();
  {
    vox::stream_set s(3);
    vox::volume<float> v(s, vox::extent3{16, 8, 6}, 1.5f);
    EXPECT_EQ(vox::sum(s, v).get(), 16.0 * 8 * 6 * 1.5);
    EXPECT_EQ(vox::max_value(s, v).get(), 1.5f);
    EXPECT_GT(vox::detail::cached_streams(), streams_before);
  }
  EXPECT_EQ(vox::detail::cached_streams(), streams_before) << "the set's streams forgot theirs";
  EXPECT_GE(pool_frees(), frees_before + 3) << "volume, scratch and slot chunk freed";
}

TEST(StreamCache, AResultOutlivesItsSetAndItsStreamsCache) {
  const std::size_t streams_before = vox::detail::cached_streams();
  vox::async_value<double> mean;
  vox::async_value<vox::volume_stats> stats;
  {
    vox::stream_set s(4);
    vox::volume<std::int32_t> v(s, vox::extent3{9, 7, 5}, 3);
    mean = vox::mean(s, v);
    stats = vox::statistics(s, v);
  }  // set and volume gone, results pending (on the cuda backend)
  EXPECT_GT(vox::detail::cached_streams(), streams_before) << "held by the results' stream";
  EXPECT_EQ(mean.get(), 3.0);
  EXPECT_EQ(stats.get().count, 9u * 7 * 5);
  EXPECT_EQ(stats.get().max, 3.0);
  mean = vox::async_value<double>();
  stats = vox::async_value<vox::volume_stats>();
  EXPECT_EQ(vox::detail::cached_streams(), streams_before);
}

TEST(StreamCache, AUsersResourceGetsTheOpsAllocations) {
  current_guard guard;
  counting_resource mr;
  vox::stream_set s(2);
  vox::volume<float> v(s, vox::extent3{12, 10, 4}, 2.0f);
  vox::set_current_memory_resource(&mr);
  const std::size_t before = mr.allocations();
  {
    auto m = vox::sum(s, v);
    EXPECT_EQ(m.get(), 12.0 * 10 * 4 * 2);
    EXPECT_GE(mr.allocations(), before + 2) << "the result slot and the scratch";
  }
  vox::volume<float> out(s, v.extent(), 0.0f);
  vox::normalize(s, v, out, 0.0, 1.0);
  s.synchronize();
  EXPECT_EQ(vox::detail::cache_stats(s.stream(0).value()).slot_chunks, 0u);
  EXPECT_EQ(vox::detail::cache_stats(s.stream(0).value()).scratch_allocations, 0u);
  vox::set_current_memory_resource(nullptr);
  out = vox::volume<float>();
  EXPECT_EQ(mr.live(), 0u);
  EXPECT_EQ(mr.mismatches(), 0u);
}

TEST(StreamCache, ThreadsReduceOnSharedAndOwnSets) {
  vox::stream_set shared(4);
  vox::volume<float> in(shared, vox::extent3{20, 12, 9}, 0.25f);
  const double want = 20.0 * 12 * 9 * 0.25;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      vox::stream_set own(1 + static_cast<std::size_t>(t));
      vox::volume<float> mine(own, in.extent(), static_cast<float>(t));
      std::deque<vox::async_value<double>> held;  // popped, not erased: no move-assignment
      vox::volume<double> per(own, vox::slice_reduction_extent(in.extent()), -1.0);
      for (int i = 0; i < 40; ++i) {
        held.push_back(vox::sum(shared, in));
        held.push_back(vox::sum(own, mine));
        // 4096 bins: the partial rows in the stream's cached scratch; the per-slice sums too.
        const auto h = vox::histogram(i % 2 == 0 ? shared : own, i % 2 == 0 ? in : mine, 4096,
                                      0.0, 8.0);
        const std::size_t bin = i % 2 == 0 ? 128 : static_cast<std::size_t>(t) * 512;
        if (h.counts()[bin] != in.extent().voxels()) ++wrong;
        vox::reduce_slices(own, mine, per, vox::slice_reduction::sum);
        for (double v : vox_test::fetch(own, per))
          if (v != 20.0 * 12 * t) ++wrong;
        if (held.size() > 24)  // frees across
          for (int k = 0; k < 12; ++k) held.pop_front();
        if (vox::max_value(i % 2 == 0 ? shared : own, i % 2 == 0 ? in : mine).get() !=
            (i % 2 == 0 ? 0.25f : static_cast<float>(t)))
          ++wrong;
      }
      for (std::size_t k = 0; k < held.size(); ++k) {
        const double w = k % 2 == 0 ? want : 20.0 * 12 * 9 * t;
        if (held[k].get() != w) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// An op's intermediate (detail::scratch_volume): storage from the current resource on the set's
// home stream, nothing enqueued to initialise it, freed there with the size it was allocated
// with; a refused allocation and a bad extent throw, naming the op, with nothing allocated.
TEST(ScratchVolume, AllocatesUninitialisedThroughTheCurrentResource) {
  current_guard g;
  counting_resource mr;
  vox::set_current_memory_resource(&mr);
  {
    vox::stream_set s(3);
    vox::volume<float> v = vox::detail::scratch_volume<float>(s, vox::extent3{19, 7, 5}, "op");
    EXPECT_EQ(v.extent(), (vox::extent3{19, 7, 5}));
    EXPECT_EQ(mr.allocations(), 1u);
    EXPECT_EQ(mr.live(), 1u);
    // Usable as any volume: written by an op on every stream, then read back.
    vox::fill(s, v, 2.5f);
    const auto h = vox_test::fetch(s, v, 0.0f);
    ASSERT_EQ(h.size(), v.size());
    for (float x : h) ASSERT_EQ(x, 2.5f);
    // A 3D box mean needs one intermediate (the 1D passes' on the host, the z walk's on CUDA):
    // it comes from the resource too, and goes back to it.
    vox::volume<float> out(s, v.extent());
    const std::size_t before = mr.allocations();
    vox::uniform(s, v, out, vox::filter_size{5, 5, 5});
    EXPECT_EQ(mr.allocations(), before + 1);
    const auto r = vox_test::fetch(s, out, 0.0f);
    for (float x : r) ASSERT_FLOAT_EQ(x, 2.5f);
  }
  EXPECT_EQ(mr.live(), 0u);
  EXPECT_EQ(mr.mismatches(), 0u) << "freed with another size or stream than allocated";

  empty_resource none;
  vox::set_current_memory_resource(&none);
  vox::stream_set s(2);
  EXPECT_THROW((void)vox::detail::scratch_volume<int>(s, vox::extent3{4, 4, 4}, "op"),
               vox::out_of_memory);
  vox::set_current_memory_resource(&mr);
  const std::size_t allocs = mr.allocations();
  try {
    (void)vox::detail::scratch_volume<double>(s, vox::extent3{0, 4, 4}, "my_op");
    ADD_FAILURE() << "an empty extent was accepted";
  } catch (const vox::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("my_op"), std::string::npos) << e.what();
  }
  EXPECT_EQ(mr.allocations(), allocs);
}

#if VOX_BACKEND_CUDA
TEST(StreamRef, ConvertsBothWays) {
  vox::stream_set s(2);
  const vox::stream_view v = s.stream(1);
  const cuda::stream_ref r = v;  // implicit: a view is never the legacy default stream
  EXPECT_EQ(r.get(), v.value());
  const vox::stream_view back(r);  // explicit
  EXPECT_EQ(back, v);
  static_assert(!std::is_convertible<cuda::stream_ref, vox::stream_view>::value,
                "from stream_ref is explicit");
}
#endif

}  // namespace voxtest_mr
