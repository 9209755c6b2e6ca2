// Internal to src/ops/filter_median.cu: the median's selection networks (sorted triples, their
// merges, the medians of 3x3 and 3x3x3 windows) and Wirth's selection for larger windows, shared
// by both backends. Not installed.
#pragma once

#include <voxstream/core/macros.hpp>

#include "filter_arith.cuh"
#include "median_network5.cuh"

namespace vox::detail::filt {

// ---- median selection ----------------------------------------------------------------------

template <class V>
VOX_HD inline void sort3(V a, V b, V c, V (&out)[3]) {
  const V lo = vmin(a, b), hi = vmax(a, b);
  out[0] = vmin(lo, c);
  const V t = vmax(lo, c);
  out[1] = vmin(t, hi);
  out[2] = vmax(t, hi);
}

// Two sorted triples -> their sorted 6 (12 min/max). With merge_6_3 below: Batcher odd-even
// merges with the +inf padding removed and unused comparators pruned, generated and checked on
// all 0-1 inputs and at random.
template <class V>
VOX_HD inline void merge_3_3(const V (&a)[3], const V (&b)[3], V (&out)[6]) {
  const V t1 = vmin(a[0], b[0]);
  const V t2 = vmax(a[0], b[0]);
  const V t3 = vmin(a[2], b[2]);
  const V t4 = vmax(a[2], b[2]);
  const V t5 = vmin(t3, t2);
  const V t6 = vmax(t3, t2);
  const V t7 = vmin(a[1], b[1]);
  const V t8 = vmax(a[1], b[1]);
  out[0] = t1;
  out[1] = vmin(t7, t5);
  out[2] = vmax(t7, t5);
  out[3] = vmin(t8, t6);
  out[4] = vmax(t8, t6);
  out[5] = t4;
}

// A sorted 6 and a sorted triple -> the sorted 9 (24 min/max).
template <class V>
VOX_HD inline void merge_6_3(const V (&s)[6], const V (&c)[3], V (&out)[9]) {
  const V t13 = vmin(s[0], c[0]);
  const V t14 = vmax(s[0], c[0]);
  const V t15 = vmin(s[4], t14);
  const V t16 = vmax(s[4], t14);
  const V t17 = vmin(s[2], c[2]);
  const V t18 = vmax(s[2], c[2]);
  const V t19 = vmin(t17, t15);
  const V t20 = vmax(t17, t15);
  const V t21 = vmin(t18, t16);
  const V t22 = vmax(t18, t16);
  const V t23 = vmin(s[1], c[1]);
  const V t24 = vmax(s[1], c[1]);
  const V t25 = vmin(s[5], t24);
  const V t26 = vmax(s[5], t24);
  const V t27 = vmin(s[3], t25);
  const V t28 = vmax(s[3], t25);
  out[0] = t13;
  out[1] = vmin(t23, t19);
  out[2] = vmax(t23, t19);
  out[3] = vmin(t27, t20);
  out[4] = vmax(t27, t20);
  out[5] = vmin(t28, t21);
  out[6] = vmax(t28, t21);
  out[7] = vmin(t26, t22);
  out[8] = vmax(t26, t22);
}

// Three sorted triples -> the sorted 9 (36 min/max).
template <class V>
VOX_HD inline void merge_3x3(const V (&a)[3], const V (&b)[3], const V (&c)[3], V (&out)[9]) {
  V s[6];
  merge_3_3(a, b, s);
  merge_6_3(s, c, out);
}

// Two sorted 9-lists -> ranks 5..14 (1-based) of their merge (48 min/max). Generated as above;
// checked on all 0-1 inputs and at random.
template <class V>
VOX_HD inline void merge_9x9_mid(const V (&p)[9], const V (&q)[9], V (&out)[10]) {
  const V t2 = vmax(p[0], q[0]);
  const V t3 = vmin(p[8], q[8]);
  const V t5 = vmin(t3, t2);
  const V t6 = vmax(t3, t2);
  const V t7 = vmin(p[4], q[4]);
  const V t8 = vmax(p[4], q[4]);
  const V t9 = vmin(t7, t5);
  const V t10 = vmax(t7, t5);
  const V t11 = vmin(t8, t6);
  const V t12 = vmax(t8, t6);
  const V t13 = vmin(p[2], q[2]);
  const V t14 = vmax(p[2], q[2]);
  const V t15 = vmin(p[6], q[6]);
  const V t16 = vmax(p[6], q[6]);
  const V t17 = vmin(t15, t14);
  const V t18 = vmax(t15, t14);
  const V t20 = vmax(t13, t9);
  const V t21 = vmin(t17, t10);
  const V t22 = vmax(t17, t10);
  const V t23 = vmin(t18, t11);
  const V t24 = vmax(t18, t11);
  const V t25 = vmin(t16, t12);
  const V t28 = vmax(p[1], q[1]);
  const V t29 = vmin(p[5], q[5]);
  const V t30 = vmax(p[5], q[5]);
  const V t31 = vmin(t29, t28);
  const V t32 = vmax(t29, t28);
  const V t33 = vmin(p[3], q[3]);
  const V t34 = vmax(p[3], q[3]);
  const V t35 = vmin(p[7], q[7]);
  const V t37 = vmin(t35, t34);
  const V t38 = vmax(t35, t34);
  const V t39 = vmin(t33, t31);
  const V t40 = vmax(t33, t31);
  const V t41 = vmin(t37, t32);
  const V t42 = vmax(t37, t32);
  const V t43 = vmin(t38, t30);
  const V t44 = vmax(t38, t30);
  const V t48 = vmax(t39, t20);
  const V t49 = vmin(t40, t21);
  const V t50 = vmax(t40, t21);
  const V t51 = vmin(t41, t22);
  const V t52 = vmax(t41, t22);
  const V t53 = vmin(t42, t23);
  const V t54 = vmax(t42, t23);
  const V t55 = vmin(t43, t24);
  const V t56 = vmax(t43, t24);
  const V t57 = vmin(t44, t25);
  out[0] = t48;
  out[1] = t49;
  out[2] = t50;
  out[3] = t51;
  out[4] = t52;
  out[5] = t53;
  out[6] = t54;
  out[7] = t55;
  out[8] = t56;
  out[9] = t57;
}

/// Median of 3 values.
template <class V>
VOX_HD inline V med3(V a, V b, V c) {
  return vmax(vmin(a, b), vmin(vmax(a, b), c));
}

/// Sorts a 3x3 plane given as v[dy * 3 + dx]: its y-columns first, then a merge of the three.
template <class V>
VOX_HD inline void sort_plane(const V* v, V (&out)[9]) {
  V a[3], b[3], c[3];
  sort3(v[0], v[3], v[6], a);
  sort3(v[1], v[4], v[7], b);
  sort3(v[2], v[5], v[8], c);
  merge_3x3(a, b, c, out);
}

/// The (k + 1)-th smallest (0-based rank k) of the union of two sorted lists S and A, given
/// m[j] = S_(k - (M - 1) + j) (M ranks of S) and A whole (M - 1 values): min over i of
/// max(A_(i-1), S_(k-i)), i the values taken from A (0..M - 1), with A_(-1) = -infinity. Ranks of
/// S outside its length are sentinels (ranks_from: the lowest value below, the highest above),
/// so that every term they make is either the term of a real split or no smaller than the result. 3x3x3 (M = 10): the first list is the merge of two
/// sorted planes (the median, k = 13: ranks 4..13, merge_9x9_mid), a the third plane; 5x5 (M =
/// 6): the merge of four sorted columns, a the fifth.
template <class V, int M>
VOX_HD inline V kth_of_ranks(const V (&m)[M], const V (&a)[M - 1]) {
  V r = m[M - 1];
  VOX_FILTER_UNROLL
  for (int i = 1; i < M; ++i) r = vmin(r, vmax(m[M - 1 - i], a[i - 1]));
  return r;
}

/// m[j] = s[K - (M - 1) + j] for j in 0..M - 1: net_bounds' lo below rank 0 and hi above rank
/// N - 1.
template <int K, class V, int N, int M>
VOX_HD inline void ranks_from(const V (&s)[N], V (&m)[M]) {
  VOX_FILTER_UNROLL
  for (int j = 0; j < M; ++j) {
    const int i = K - (M - 1) + j;
    const int in = i < 0 ? 0 : i >= N ? N - 1 : i;  // (an index of s even where unused)
    m[j] = i < 0 ? net_bounds<V>::lo() : i >= N ? net_bounds<V>::hi() : s[in];
  }
}

/// ranks_from<k> for the k in [Lo, Hi]: a binary search over k by uniform branches (k is the
/// same for every thread, a filter's rank), no indexing of registers at run time.
template <int Lo, int Hi, class V, int N, int M>
VOX_HD inline void ranks_between(const V (&s)[N], int k, V (&m)[M]) {
  if constexpr (Lo == Hi) {
    ranks_from<Lo>(s, m);
  } else {
    constexpr int mid = (Lo + Hi) / 2;
    if (k <= mid) {
      ranks_between<Lo, mid>(s, k, m);
    } else {
      ranks_between<mid + 1, Hi>(s, k, m);
    }
  }
}

/// The window of ranks for a rank K known at compile time (the median's): ranks_from<K>.
template <int K>
struct fixed_rank {
  template <class V, int N, int M>
  VOX_HD void operator()(const V (&s)[N], V (&m)[M]) const {
    ranks_from<K>(s, m);
  }
};
/// The window of ranks for a rank k known at run time, 0 .. N + M - 2 (the values of both
/// lists; 3x3x3: the merge of two planes, N = 18, and the third, M - 1 = 9): ranks_between.
struct run_time_rank {
  int k;
  template <class V, int N, int M>
  VOX_HD void operator()(const V (&s)[N], V (&m)[M]) const {
    ranks_between<0, N + M - 2>(s, k, m);
  }
};

/// Four sorted columns of five merged into their sorted 20 (merge_5x5 twice, merge_10x10: 122
/// min/max; the compiler drops the comparators that feed no rank the caller keeps: 88 for the
/// six ranks 7..12 of the median).
template <class V>
VOX_HD inline void merge_four_columns(const V (&p)[5], const V (&q)[5], const V (&u)[5],
                                      const V (&w)[5], V (&out)[20]) {
  V a[10], b[10];
  merge_5x5(p, q, a);
  merge_5x5(u, w, b);
  merge_10x10(a, b, out);
}

/// A rank of a 5x5 window given its five sorted columns c[j][i] (the i-th smallest of column j):
/// columns 0..3 merged (merge_four_columns), the rank's window of six ranks of the merge taken
/// by `win` (fixed_rank, run_time_rank), then kth_of_ranks with column 4. The median (rank 12)
/// takes 98 min/max, against median25_of_sorted_columns' 118.
template <class V, class Win>
VOX_HD inline V rank25_of_sorted_columns(const V (&c)[5][5], Win win) {
  V s[20], m[6];
  merge_four_columns(c[0], c[1], c[2], c[3], s);
  win(s, m);
  return kth_of_ranks(m, c[4]);
}

/// The same rank of two neighbouring 5x5 windows given their six sorted columns c[j][i]; window
/// a takes columns 0-4, b columns 1-5: their four common columns are merged once, and each
/// window selects with its own fifth column (the median: 88 + 2 x 10 min/max, against
/// median25_pair_of_sorted_columns' 189). For voxels that take one value a register.
template <class V, class Win>
VOX_HD inline void rank25_pair_of_sorted_columns(const V (&c)[6][5], Win win, V& a, V& b) {
  V s[20], m[6];
  merge_four_columns(c[1], c[2], c[3], c[4], s);
  win(s, m);
  a = kth_of_ranks(m, c[0]);
  b = kth_of_ranks(m, c[5]);
}

/// w[k] for a rank k (0..8) that every thread shares, by a switch (no indexing of registers at
/// run time).
template <class V>
VOX_HD inline V pick_rank9(const V (&w)[9], int k) {
  switch (k) {
    case 0:
      return w[0];
    case 1:
      return w[1];
    case 2:
      return w[2];
    case 3:
      return w[3];
    case 5:
      return w[5];
    case 6:
      return w[6];
    case 7:
      return w[7];
    case 8:
      return w[8];
    default:
      return w[4];
  }
}

/// Median of a 3x3 window v[dy * 3 + dx]: exact from the sorted y-columns.
template <class V>
VOX_HD inline V median9(const V (&v)[9]) {
  V a[3], b[3], c[3];
  sort3(v[0], v[3], v[6], a);
  sort3(v[1], v[4], v[7], b);
  sort3(v[2], v[5], v[8], c);
  return med3(vmax(vmax(a[0], b[0]), c[0]), med3(a[1], b[1], c[1]), vmin(vmin(a[2], b[2]), c[2]));
}

/// Median of a 3x3x3 window v[(dz * 3 + dy) * 3 + dx]: the networks of the fused CUDA kernel.
template <class V>
VOX_HD inline V median27(const V (&v)[27]) {
  V p0[9], p1[9], p2[9], m[10];
  sort_plane(v, p0);
  sort_plane(v + 9, p1);
  sort_plane(v + 18, p2);
  merge_9x9_mid(p1, p2, m);
  return kth_of_ranks(m, p0);
}

/// The rank-k smallest (0-based, 0..26) of a 3x3x3 window v[(dz * 3 + dy) * 3 + dx]: the
/// networks of the fused CUDA kernels for a rank other than the median (planes 1 and 2 merged
/// whole, merge_9x9; then run_time_rank and kth_of_ranks).
template <class V>
VOX_HD inline V rank27(const V (&v)[27], int k) {
  V p0[9], p1[9], p2[9], s[18], m[10];
  sort_plane(v, p0);
  sort_plane(v + 9, p1);
  sort_plane(v + 18, p2);
  merge_9x9(p1, p2, s);
  run_time_rank{k}(s, m);
  return kth_of_ranks(m, p0);
}

/// The rank-k smallest (0..8) of a 3x3 window v[dy * 3 + dx]: its sorted y-columns merged whole.
template <class V>
VOX_HD inline V rank9(const V (&v)[9], int k) {
  V a[3], b[3], c[3], w[9];
  sort3(v[0], v[3], v[6], a);
  sort3(v[1], v[4], v[7], b);
  sort3(v[2], v[5], v[8], c);
  merge_3x3(a, b, c, w);
  return pick_rank9(w, k);
}

/// The k-th smallest (0-based) of v[0..n), partially reordering v (Wirth's selection).
template <class V>
VOX_HD inline V select_kth(V* v, int n, int k) {
  int l = 0, m = n - 1;
  while (l < m) {
    const V x = v[k];
    int i = l, j = m;
    do {
      while (v[i] < x) ++i;
      while (x < v[j]) --j;
      if (i <= j) {
        const V t = v[i];
        v[i] = v[j];
        v[j] = t;
        ++i;
        --j;
      }
    } while (i <= j);
    if (j < k) l = i;
    if (k < i) m = j;
  }
  return v[k];
}

}  // namespace vox::detail::filt
