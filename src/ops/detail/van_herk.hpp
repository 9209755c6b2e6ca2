// Internal to the box filters (both backends compile it; the host tests check it against a
// plain sliding window): one walker's sliding-window min or max by van Herk / Gil-Werman.
//
// The walker reads a line of `len` values in order and emits the min (or max) of every window
// of K consecutive values, len - K + 1 of them, the window starting at value 0 first. Values are
// grouped in blocks of K: value t is position j = t mod K of block t / K. The walker keeps the
// running combination of the current block's values so far (`run`) and, in K slots, the
// previous block's suffixes (slot j: the combination of its positions j .. K - 1). The window
// that ends at value t starts at position j + 1 of the previous block, so its result is slot
// j + 1 combined with `run`; when j == K - 1 the window is the current block, `run` itself.
// Slot j is rewritten with value t once that result is formed (its suffix was last read at
// position j - 1), and when a block is complete its slots are turned into suffixes in place.
// Per value: one load, at most one emit, two combines, and about two slot reads and two slot
// writes, whatever K.
// Not installed.
#pragma once

#include <cstddef>

#include <voxstream/core/macros.hpp>

#include "filter_arith.cuh"

namespace vox::detail::filt {

/// Runs the walk. `load(t, v)` reads value t into v (issued D values ahead, so that D device
/// loads stay in flight through the work of the values before them); `emit(v)` takes the next
/// window's result; `put(j, v)` and `get(j, v)` write and read slot j (0 <= j < K);
/// `combine(a, b)` sets a to the min (or max) of a and b, and must be associative and
/// commutative. K >= 1, D >= 1. Values are loaded once each, in order.
template <class Pack, int D = 1, class Load, class Emit, class Put, class Get, class Combine>
VOX_HD inline void van_herk_walk(std::ptrdiff_t len, int K, Load&& load, Emit&& emit, Put&& put,
                                 Get&& get, Combine&& combine) {
  static_assert(D >= 1, "at least one load ahead");
  if (len <= 0) return;
  Pack queue[D];
  VOX_FILTER_UNROLL
  for (int i = 0; i < D; ++i)
    if (i < len) load(std::ptrdiff_t{i}, queue[i]);
  Pack run{};
  int j = 0;
  for (std::ptrdiff_t t0 = 0; t0 < len; t0 += D) {
    VOX_FILTER_UNROLL
    for (int i = 0; i < D; ++i) {
      const std::ptrdiff_t t = t0 + i;
      if (t < len) {
        const Pack v = queue[i];
        if (t + D < len) load(t + D, queue[i]);
        if (j == 0) {
          run = v;
        } else {
          combine(run, v);
        }
        if (t >= K - 1) {
          if (j == K - 1) {
            emit(run);
          } else {
            Pack res = run;
            Pack h{};
            get(j + 1, h);
            combine(res, h);
            emit(res);
          }
        }
        if (j == K - 1) {
          // The block is complete: its suffixes, in place (slot K - 1 is v itself).
          Pack h = v;
          put(K - 1, h);
          for (int q = K - 2; q >= 0; --q) {
            Pack a{};
            get(q, a);
            combine(h, a);
            put(q, h);
          }
          j = 0;
        } else {
          put(j, v);
          ++j;
        }
      }
    }
  }
}

}  // namespace vox::detail::filt
