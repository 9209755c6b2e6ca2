// dist_mpi: one process per GPU, bootstrapped with MPI (built when voxstream has NCCL and MPI).
//   mpirun -n N ./dist_mpi
// Rank r owns slices [24 r, 24 r + 24) of a 64 x 48 x 24N float volume whose voxels are a
// function of (x, y, z). It holds its slab as a partitioned_volume of two partitions on its GPU
// (halos exchanged by NCCL send/recv to self), then computes sum, min, max, a histogram and the
// maximum projection along z through the NCCL transport: all-reduces over every rank (a reduce
// when N == 1), so each rank gets the results of the whole volume. Each rank checks them against
// a host computation of the whole volume and prints OK or MISMATCH; it exits non-zero on any
// mismatch.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <vector>

#include <voxstream/dist/nccl_transport.hpp>
#include <voxstream/dist/partitioned_volume.hpp>
#include <voxstream/voxstream.hpp>

namespace {

constexpr std::size_t nx = 64;
constexpr std::size_t ny = 48;
constexpr std::size_t slab = 24;  // slices per rank
constexpr std::size_t bins = 40;
constexpr double lo = -60.0;
constexpr double hi = 60.0;

// Multiples of 1/4 in [-50, 51.75]: float sums of a slab are exact, so results compare exactly.
float voxel(std::size_t x, std::size_t y, std::size_t z) {
  return static_cast<float>((x * 7 + y * 13 + z * 29) % 101) - 50.0f +
         0.25f * static_cast<float>((x + z) % 8);
}

std::vector<float> slices(std::size_t z0, std::size_t z1) {
  std::vector<float> v;
  v.reserve(nx * ny * (z1 - z0));
  for (std::size_t z = z0; z < z1; ++z)
    for (std::size_t y = 0; y < ny; ++y)
      for (std::size_t x = 0; x < nx; ++x) v.push_back(voxel(x, y, z));
  return v;
}

int run(int rank, int ranks) {
  vox::dist::nccl_transport t = vox::dist::nccl_transport::from_mpi(MPI_COMM_WORLD);
  const int device = t.devices().front();
  const vox::dist::device_scope on(device);

  // This rank's slab, in two partitions on its GPU, with halos of 2 slices between them.
  const std::size_t z0 = slab * static_cast<std::size_t>(rank);
  const vox::extent3 e{nx, ny, slab};
  auto pv = vox::dist::partitioned_volume<float>::on_devices({device, device}, 2, e, 2);
  const std::vector<float> mine = slices(z0, z0 + slab);
  pv.scatter(mine.data(), mine.size());
  // Refill partition 0's upper halo from partition 1 through NCCL (send/recv to self).
  vox::dist::exchange_halos(pv, t);
  bool halos_ok = true;
  for (std::size_t p = 0; p < pv.partitions(); ++p) {
    std::vector<float> held(pv.part(p).size());
    vox::download(pv.streams(p), pv.part(p), held.data(), held.size());
    const auto& h = pv.plan()[p].held;
    halos_ok = halos_ok && held == slices(z0 + h.z0, z0 + h.z1);
  }

  // The whole volume's results, every rank taking part in each collective.
  const double sum = vox::dist::sum(pv, t);
  const float vmin = vox::dist::min_value(pv, t);
  const float vmax = vox::dist::max_value(pv, t);
  const std::vector<std::uint64_t> hist = vox::dist::histogram(pv, bins, lo, hi, t);
  vox::stream_set& s0 = pv.streams(0);
  vox::volume<float> proj(s0, {nx, ny, 1});
  vox::dist::max_projection_z(pv, proj, t);
  std::vector<float> got_proj(proj.size());
  vox::download(s0, proj, got_proj.data(), got_proj.size());

  // Host reference over all ranks' slices.
  const std::vector<float> all = slices(0, slab * static_cast<std::size_t>(ranks));
  double want_sum = 0.0;
  float want_min = std::numeric_limits<float>::infinity();
  float want_max = -want_min;
  std::vector<std::uint64_t> want_hist(bins, 0);
  std::vector<float> want_proj(nx * ny, -std::numeric_limits<float>::infinity());
  const double scale = static_cast<double>(bins) / (hi - lo);  // vox::histogram's binning
  for (std::size_t i = 0; i < all.size(); ++i) {
    const float v = all[i];
    want_sum += v;
    want_min = std::min(want_min, v);
    want_max = std::max(want_max, v);
    if (v >= lo && v < hi)
      ++want_hist[std::min(bins - 1, static_cast<std::size_t>((v - lo) * scale))];
    want_proj[i % (nx * ny)] = std::max(want_proj[i % (nx * ny)], v);
  }
  const bool ok = halos_ok && sum == want_sum && vmin == want_min && vmax == want_max &&
                  hist == want_hist && got_proj == want_proj;
  std::printf(
      "dist_mpi: rank %d of %d on GPU %d, %zu x %zu x %zu volume: sum %.2f min %.2f "
      "max %.2f, halos %s, histogram %s, projection %s: %s\n",
      rank, ranks, device, nx, ny, slab * static_cast<std::size_t>(ranks), sum,
      static_cast<double>(vmin), static_cast<double>(vmax), halos_ok ? "ok" : "wrong",
      hist == want_hist ? "ok" : "wrong", got_proj == want_proj ? "ok" : "wrong",
      ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // NVLink multicast stays off unless the environment says otherwise (NCCL reads it at init).
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  MPI_Init(&argc, &argv);
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int rc = 1;
  try {
    rc = run(rank, ranks);  // the transport and volumes are gone before MPI_Finalize
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "dist_mpi: rank %d: %s\n", rank, ex.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
