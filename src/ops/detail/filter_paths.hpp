// Internal: switches between equivalent paths of the CUDA filters, so that a benchmark can time
// both in one run (bench_ops --sweep) and a test can check that they give the same voxels. Not
// installed, not API: the library's choice is the default.
#pragma once

#include <atomic>

namespace vox::detail::filt {

/// 3D grey_erosion / grey_dilation of z size 5 and more: the z pass as a walk of its own, then
/// the 2D tile kernel (true, the default), or z over a ring of xy results in the tile kernel
/// (false).
inline std::atomic<bool> minmax_z_walk{true};

/// The 3x3(x3) uniform filter of 8- and 16-bit voxels with whole-number sums: int arithmetic
/// (true, the default), or float sums with a correctly rounded division per pass (false).
inline std::atomic<bool> uniform3_int_sums{true};

/// Under uniform3_int_sums, for uint8 and uint16 voxels with a cval in the voxel range (or a
/// mode other than constant): unsigned int arithmetic (true, the default), whose quotients by 3
/// are a multiply-high and a shift and need no requantisation (a mean of in-range values stays in
/// range), or signed int with a clamp per pass (false). Both give the same voxels. On an H100
/// (2026-12-06, 512x512x300, 8 streams) the first took 0.726x the second's time for the 3D mean
/// of uint8 (0.191 against 0.263 ms) and 0.834x for uint16; per slice 0.793x (uint8) and 1.017x
/// (uint16).
inline std::atomic<bool> uniform3_uint_sums{true};

/// The 3D Gaussian of radius at most 8 along every axis: one kernel per slab that filters each
/// slice in x and y into a shared-memory ring and sums z from the ring (true), or the xy kernel
/// into an intermediate volume and then the z kernel (false, the default until the fused kernel
/// is measured on a GPU). Both give the same voxels. The host backend has one path.
inline std::atomic<bool> gauss_fused{false};

/// The Gaussian's xy pass of radius bucket 12 or 16 on voxels other than float: the
/// table-addressed kernel (border rules once per tile, each warp loading whole rows; true, the
/// default: 0.61-0.66x the time of the other for uint8 and uint16 at sigma 4 on an H100,
/// 2026-12-05), or the register-prefetch kernel, which at these radii holds no prefetch and maps
/// every element of every slice (false). Both give the same voxels.
inline std::atomic<bool> gauss_xy_tables{true};

/// The Gaussian's xy pass of radius bucket 4 or 8 on 8- and 16-bit voxels: the table-addressed
/// kernel (true, the default: its warps load whole rows through the tables and store them
/// converted to float in shared memory, one slice ahead), or the register-prefetch kernel
/// (false). Float voxels always take the table-addressed kernel with asynchronous copies. Both
/// give the same voxels. On an H100 (2026-12-06, 512x512x300, 8 streams) the whole Gaussian took
/// 0.78-0.93x the time with the first for uint8 (sigma 1, 2 and (1, 1, 3)) and 0.87-0.95x for
/// uint16.
inline std::atomic<bool> gauss_xy_tables_small{true};

/// The Gaussian of float filter type with an x or y radius of 17 to 32, or a z radius over 16:
/// two passes (true, the default): the xy pass at radius buckets 24 and 32 (the walk under
/// gauss_xy_walk, else the table-addressed tile kernel; radii up to 16 as usual), then the z pass
/// at buckets up to 32 (the FIR under gauss_z_fir; the ring takes 16 at most) or the 1D pass
/// along z (any larger z radius); or the three 1D passes (false). Radii over 32 in x or y always
/// take the 1D passes. On an H100 (2026-12-06, revision 37adbf7, 512x512x300, 8 streams) the
/// three passes took 1.72x the two passes' time at sigma 8 for float32 (2.374 against 1.378
/// ms), 1.76x for uint8 and 1.53x for uint16; 512^3 float32 on one stream 3.887 against 1.996
/// ms, with 21.4 against 11.0 us of host enqueue. Before the walk and the FIR (the tile kernel,
/// then the 1D pass along z) the two passes had taken 0.948x the three passes' time for
/// float32, but 1.263x for uint8 and 1.511x for uint16.
inline std::atomic<bool> gauss_wide{true};

/// The Gaussian by three tiled 1D passes (filter_line.cuh) even where the fused xy and z
/// kernels serve (true), to measure one against the other; false (the default): the fused
/// kernels where they serve, the tiled passes elsewhere (radius up to 240, then the generic
/// pass).
inline std::atomic<bool> gauss_lines{false};

/// The Gaussian's z pass (the two-kernel path) of radius bucket up to 16: a transposed-form
/// FIR per column, one load, 2 r + 1 multiply-adds and one store per step (true, the default),
/// or a register ring of the 2 R + 1 inputs stepped in unrolled rounds of 2 R + 1 (false). Both
/// give the same voxels. Buckets 24 and 32 (under gauss_wide) always take the FIR. On an H100
/// (2026-12-06, revision 10bc910, 512x512x300, 8 streams) the whole Gaussian took
/// 1.015-1.057x the FIR's time with the ring at sigma 1, 2 and (1, 1, 3), and 1.198-1.241x at
/// sigma 4 (float32: 0.971 against 0.782 ms), every voxel type.
inline std::atomic<bool> gauss_z_fir{true};

/// The Gaussian's xy pass of every radius bucket (4 to 32; the two-kernel path, and 2D): a walk
/// along y per strip of 128 columns, the x pass once per row and y by a transposed-form FIR in
/// registers (true, the default), or the tile kernels, which filter each tile's 2 R halo rows in
/// x again and read the y taps from shared memory (false). Both give the same voxels. On an H100
/// (2026-12-06, revision 10bc910, 512x512x300, 8 streams) the whole Gaussian took
/// 1.062-1.251x the walk's time with the tile kernels for float32 (sigma 4: 0.979 against 0.782
/// ms), 1.074-1.241x for uint8 and 1.039-1.197x for uint16.
inline std::atomic<bool> gauss_xy_walk{true};

/// The fused box tile kernel (box, min and max of x and y radius up to 16; the y and x passes
/// after a z walk) on 4- and 8-byte voxels: the next slice's haloed tile staged by asynchronous
/// copies into a second shared buffer (true, the default), or by loads into registers (false).
/// Both give the same voxels. On an H100 (2026-12-06, float32 512x512x300, 8 streams, sizes 5, 7
/// and 9) the first took 0.86-0.90x the time of the second in 3D and 0.77-0.85x per slice (box
/// mean, erosion and dilation).
inline std::atomic<bool> box_async{true};

/// The box mean of integer voxels, and min and max of every voxel type, of x radius up to 4 (2
/// for 8-byte voxels) after any z pass, and their 2D forms: the y and x passes as one walk along
/// y (box_yx_walk_kernel: per row one vector in and one out per lane, the y window by running
/// sums or van Herk blocks, the x window from the two neighbouring lanes by shuffles, the loads
/// of 4 rows in flight; true, the default), or the fused tile kernel, which reads each output's
/// 2 rx + 1 x taps and 2 ry + 1 y taps from shared memory and registers (false). Both give the
/// same voxels. Under the walk, the 3D min and max of z radius 1 take the z walk too (else the
/// tile kernel's ring). The mean of floating voxels keeps the tile kernel. On an H100
/// (2026-12-06, revision 9daaf69, 512x512x300, 8 streams, sizes 5-9) the tile kernel took
/// 1.25-1.55x the walk's time for the 3D mean of uint8, 1.21-1.46x for uint16, 1.34-1.90x per
/// slice, and 1.26-1.71x for uint8/uint16 min and max in 3D; for float32 min and max 0.98-1.30x
/// in 3D and 0.99-1.54x per slice; for the float32 mean 0.71-0.93x (the walk sums in double).
inline std::atomic<bool> box_yx_walk{true};

/// Under box_yx_walk: the walk's second form (true, the default), in which chunks whose rows
/// and halo lie inside the slice address their rows without the border rule and by 32-bit
/// offsets, for min and max and for the mean of 8-bit voxels; or the first form everywhere
/// (false). Both give the same voxels. On an H100 (2026-12-06, revision b33dc6a, 512x512x300,
/// 8 streams, sizes 5-9) the second form took 0.935-0.998x the first's time for uint8 (mean,
/// min and max, 3D and per slice), 0.885-0.929x for uint16 min and max and 0.970-1.007x for
/// float32's, but 1.003-1.012x for the uint16 mean, which keeps the first. An earlier second form
/// with 8 uint8 voxels a lane (revision 8f4ddef) took 1.16-1.44x the first's time for uint8:
/// lanes keep 4.
inline std::atomic<bool> box_yx_walk_v2{true};

/// The z walks of the 3D box mean, min and max (box_z_walk_kernel, box_z_minmax_walk_kernel):
/// each lane with the loads of 4 slices in flight, and the mean of uint8 and uint16 voxels in
/// unsigned sums with each quotient by one multiply-high and no clamp (true, the default); or
/// the loads of one slice in flight and int sums, a signed quotient and a clamp (false). Both
/// give the same voxels. On an H100 (2026-12-06, revision 9daaf69, 512x512x300, 8 streams,
/// sizes 5-9, after it the yx walk) the second took 1.00-1.04x the first's time for min and
/// max of uint8/uint16 and 1.02-1.04x for float32, but 0.96-1.00x for the mean of uint8/uint16
/// and 0.97-1.02x for float32's: the uint8 z walk stays at 39% of the DRAM bandwidth either way
/// (Nsight Compute, 112 us for the mean of size 9, about twice a copy).
inline std::atomic<bool> box_z_walk_deep{true};

/// The 3x3x3 median of 8- and 16-bit voxels: its selection network on 32-bit int values in
/// registers and in the shared sorted triples (true, the default), or on the voxel type itself
/// (false), whose pairs of 1- or 2-byte values are packed and unpacked around every min and
/// max. Both give the same voxels. On an H100 (2026-12-06, 512x512x300, 8 streams) the first
/// took 0.765x the second's time for uint8 (0.531 against 0.694 ms) and 0.928x for uint16.
inline std::atomic<bool> median3_int_values{true};

/// The 3x3x3 median of 8- and 16-bit voxels: a thread's two output columns as the two 16-bit
/// lanes of one word (lanes16.hpp), one network for both, each min or max one VIMNMX (true, the
/// default), or median3_int_values' choice (false). All give the same voxels.
inline std::atomic<bool> median3_lanes{true};

/// Under median3_lanes, median3p_kernel's occupancy bound: three blocks of 256 threads per SM
/// (true, the default: __launch_bounds__ min blocks 3, 80 registers a thread and 48 bytes of
/// spills, ptxas, sm_90, CUDA 13.0), or two (false: 95 registers, 16 warps an SM, where Nsight
/// Compute saw 57.7% of the issue slots busy). The same code and voxels; only the register
/// budget differs. On an H200 (2026-12-07, 512x512x300, 8 streams) three blocks took 0.92x the
/// time of two for uint8 (0.376 against 0.408 ms) and 0.93x for uint16 (0.364 against 0.391); on
/// an H100 the same day 0.371 against 0.401 ms and 0.359 against 0.388 ms.
inline std::atomic<bool> median3_three_blocks{true};

/// The rank machinery (rank_filter, percentile_filter, the median beyond 3x3x3; CUDA only): for
/// windows square in x and y of radius 1 to 3, rank_kernel compiled for those radii (true, the
/// default: the window's loops unroll and its shared-memory offsets are constants), or the
/// instance that takes any radii at run time (false). The same voxels.
inline std::atomic<bool> rank_fixed_radii{true};

/// rank_filter and percentile_filter over 3x3x3 windows and 3x3 per slice (and 5x5 per slice
/// under rank25_nets) at a rank other than the median: the median's kernels and networks in their
/// form for any rank (true, the default: on CUDA median3w_kernel / median3p_kernel with the shared
/// planes merged whole, merge_9x9; median2d_kernel merging the three sorted columns whole (3x3),
/// or four and selecting with the fifth (5x5, rank25_of_columns); 8-byte voxels in 3D take the
/// rank kernel; on the host median_fn / median3_lanes_fn by rank27 and rank9, median25_fn by
/// rank25_of_columns), or the rank machinery (false: rank_kernel on CUDA, the per-voxel selection
/// on the host). The same voxels. Measured on an H100 (2026-12-07): 5.1-15.6x faster than the
/// rank kernel for 3x3x3 and 3x3.
inline std::atomic<bool> rank_nets{true};

/// Under rank_nets, the 5x5 windows per slice at a rank other than the median too (true, the
/// default), or not (false: the rank machinery). The same voxels. Measured on an H100
/// (2026-12-07, 512x512x300, the 25th percentile, bench_ops --sweep case percentile2d_size=5):
/// 0.595 / 0.552 / 0.613 ms for uint8 / uint16 / float32 against the rank kernel's 2.626 /
/// 5.704 / 5.655 ms.
inline std::atomic<bool> rank25_nets{true};

/// The 3x3 and 5x5 medians per slice (also 3D windows of depth 1). On the CUDA backend,
/// true (the default): tiles of sorted y-columns in shared memory, two outputs a thread in lanes,
/// 12 min or max a pair for 3x3 and for 5x5 the merge of median25_merge or the 118 of
/// median25_of_sorted_columns (median2d_kernel); false: the per-voxel network for 3x3
/// (median_fn: nine loads a voxel) and the rank kernel for 5x5. On the host backend, 5x5 only:
/// the same sorted columns and network two outputs a call (median25_fn) or the per-voxel
/// selection. All give the same voxels.
inline std::atomic<bool> median2d_net{true};

/// The 5x5 median per slice of voxels without 16-bit lanes (32- and 64-bit), under median2d_net
/// with median25_merge off: a thread's two neighbouring windows by
/// median25_pair_of_sorted_columns, the rows of their four common columns sorted once (true, the
/// default: 189 min or max for the two), or each by median25_of_sorted_columns on the pair of
/// values (false: 2 x 118). Both backends; the same voxels.
inline std::atomic<bool> median2d_pair_net{true};

/// The 5x5 median per slice, under median2d_net: by merging four of the window's sorted columns
/// and selecting with the fifth (true: rank25_of_columns at rank 12, 98 min or max a pair in
/// 16-bit lanes, 88 + 2 x 10 for a pair of values whose four common columns are merged once), or
/// by the generated row networks (false: median25_of_sorted_columns' 118, or median2d_pair_net's
/// 189 for the pair). Both backends; the same voxels. True, the default: on an H100 (2026-12-07,
/// 512x512x300) 0.482 / 0.451 / 0.512 ms for uint8 / uint16 / float32 against the row networks'
/// 0.521 / 0.499 / 0.697 ms in the same run.
inline std::atomic<bool> median25_merge{true};

/// Sets a switch above for the object's lifetime and restores its value afterwards (tests and
/// benchmarks that run both paths).
class scoped_path {
 public:
  scoped_path(std::atomic<bool>& path, bool on) : path_(path), was_(path.exchange(on)) {}
  ~scoped_path() { path_.store(was_); }
  scoped_path(const scoped_path&) = delete;
  scoped_path& operator=(const scoped_path&) = delete;

 private:
  std::atomic<bool>& path_;
  bool was_;
};

}  // namespace vox::detail::filt
