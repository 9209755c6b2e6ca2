#include <voxstream/memory/memory_resource.hpp>

#include <atomic>

#include <voxstream/memory/stream_allocator.hpp>

namespace vox {

namespace {
/// voxstream's pool (detail::allocate_async / deallocate_async, stream_allocator.cpp).
class pool_resource final : public memory_resource {
  void* do_allocate(std::size_t bytes, stream_view s) override {
    return detail::allocate_async(bytes, s);
  }
  void do_deallocate(void* p, std::size_t bytes, stream_view s) noexcept override {
    detail::deallocate_async(p, bytes, s);
  }
  // Pools are per device and never destroyed, so every pool_resource is the same pool.
  [[nodiscard]] bool do_is_equal(const memory_resource& o) const noexcept override {
    return dynamic_cast<const pool_resource*>(&o) != nullptr;
  }
};

pool_resource& the_pool() noexcept {
  static pool_resource r;  // constant-initialisable, never destroyed before static volumes
  return r;
}

std::atomic<memory_resource*>& current() noexcept {
  static std::atomic<memory_resource*> c{&the_pool()};
  return c;
}
}  // namespace

memory_resource& pool_memory_resource() noexcept { return the_pool(); }

memory_resource& current_memory_resource() noexcept {
  return *current().load(std::memory_order_acquire);
}

memory_resource* set_current_memory_resource(memory_resource* mr) noexcept {
  return current().exchange(mr != nullptr ? mr : &the_pool(), std::memory_order_acq_rel);
}

}  // namespace vox
