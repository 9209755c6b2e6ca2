#include <cstdio>
#include <voxstream/ops/transform.hpp>  // vox::transform (user functors: compile with nvcc)
#include <voxstream/voxstream.hpp>      // volumes, stream sets, transfers, every op, file io

int main() {
  vox::stream_set streams(8);                        // 8 non-blocking streams
  const vox::extent3 e{128, 128, 64};                // x, y, z (z = slice index)

  // Files: write a host volume, read it back (NRRD, MetaImage, raw, TIFF; .png for 2D).
  vox::host_volume<float> h(e);                      // pinned host memory
  for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = static_cast<float>(i % 1000);
  vox::io::write("ct.nrrd", h);                      // blocks; atomic (temporary + rename)
  vox::host_volume<float> ct;
  const vox::io::volume_info info = vox::io::read("ct.nrrd", ct);  // blocks

  // Device volumes: allocated and uploaded stream-ordered; every op below is asynchronous.
  vox::volume<float> in(streams, info.extent), smooth(streams, e), med(streams, e);
  vox::upload(streams, ct, in);

  // Elementwise, and your own functor.
  vox::volume<float> scaled(streams, e);
  vox::multiply(streams, in, 0.001, scaled);         // scaled = in * 0.001
  vox::transform(streams, scaled, scaled, [] VOX_LAMBDA(float v) { return v * v; });
  vox::volume<std::uint8_t> mask(streams, e);
  vox::threshold(streams, scaled, mask, 0.25);       // 1 where scaled > 0.25, else 0

  // Filters (scipy.ndimage's definitions and defaults).
  vox::gaussian(streams, in, smooth, 2.0);           // sigma 2 along x, y and z
  vox::median(streams, in, med, 3);                  // 3x3x3

  // Reductions return an async_value: .get() blocks on that result's event only.
  vox::async_value<double> total = vox::sum(streams, smooth);  // sum_t<float> is double
  vox::async_value<vox::volume_stats> st = vox::statistics(streams, med);
  std::printf("sum %.6g, mean %.6g, max %.6g\n", total.get(), st.get().mean, st.get().max);

  // Histogram: device counts; counts() and percentile() block on the histogram's event.
  vox::histogram_counts hist = vox::histogram(streams, in, 256, 0.0, 1000.0);
  std::printf("bin 0: %llu voxels, median ~%.4g\n",
              static_cast<unsigned long long>(hist.counts()[0]), vox::percentile(hist, 50));

  // Projections and geometry.
  vox::volume<float> mip(streams, vox::projection_extent(e, vox::projection_axis::z));
  vox::max_projection(streams, smooth, mip, vox::projection_axis::z);
  vox::volume<float> small(streams, vox::extent3{64, 64, 32});
  vox::downsample_mean(streams, smooth, small, vox::extent3{2, 2, 2});
  vox::volume<float> roi(streams, vox::extent3{64, 64, 16});
  vox::crop(streams, smooth, roi, vox::extent3{32, 32, 24});  // offset of the box

  // Back to the host and to files.
  vox::host_volume<float> mip_h(mip.extent());
  vox::download(streams, mip, mip_h);                // asynchronous into pinned memory
  mip_h.synchronize();                               // blocks until mip_h holds the result
  vox::io::write("mip.png", mip_h);                  // a 2D volume as a grey PNG
  vox::host_volume<std::uint8_t> mask_h(e);
  vox::download(streams, mask, mask_h);
  mask_h.synchronize();
  vox::io::write("mask.nrrd", mask_h);
  return 0;
}
