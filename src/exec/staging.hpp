// Private to exec (io's transfers use it too): the pinned staging buffers of a stream_set,
// for pageable transfers. Implemented in src/exec/staging.cpp.
#pragma once

#include <cstddef>
#include <vector>

#include <voxstream/core/stream.hpp>
#include <voxstream/exec/stream_set.hpp>
#include <voxstream/memory/stream_allocator.hpp>

namespace vox {

struct stream_set::staging {
  staging(std::size_t buffers, std::size_t bytes);
  ~staging();
  staging(const staging&) = delete;
  staging& operator=(const staging&) = delete;

  struct buffer {
    void* data{nullptr};
    event done;       ///< recorded after the last copy that used the buffer
    bool used{false};  ///< done has been recorded at least once
    void* pending_dst{nullptr};  ///< pageable destination to fill once `done` completes
    std::size_t pending_bytes{0};
  };
  std::size_t bytes{0};
  std::vector<buffer> ring;
  std::size_t next{0};

  /// @brief The next buffer in the ring; blocks the host until its previous copy completed and
  ///        hands a pending download's bytes to their destination.
  buffer& acquire(const char* op);
  /// @brief Completes every pending download, oldest first (host waits on their events).
  void drain(const char* op);
};

}  // namespace vox
