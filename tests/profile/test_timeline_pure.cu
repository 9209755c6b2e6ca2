// The timeline's statistics and file formats are pure functions of the records: these tests
// feed them synthetic records and check exact numbers, the JSON (parsed) and the SVG (checked
// as XML). They run on both backends.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <voxstream/core/error.hpp>
#include <voxstream/profile/timeline.hpp>

#include "text_check.hpp"

namespace voxtest_timeline_pure {

namespace fs = std::filesystem;
using vox::profile::activity_kind;
using vox::profile::activity_record;

activity_record rec(activity_kind k, std::uint64_t t0, std::uint64_t t1, std::uint64_t stream,
                    std::int64_t index, const std::string& name) {
  activity_record r;
  r.kind = k;
  r.start_ns = t0;
  r.end_ns = t1;
  r.stream = stream;
  r.stream_index = index;
  r.name = name;
  return r;
}

// Four kernels on three streams, one copy, one host wait:
//   stream 10 (index 0): k1 [1000,1100], k1 [1150,1250]   (a 50 ns gap between them)
//   stream 11 (index 1): k2 [1050,1120]                    (overlaps the first k1)
//   stream 12 (index 2): k1 [1300,1400]
//   stream 11: memcpy HtoD [900,950]; stream 0: cudaStreamSynchronize [1500,1600], blocking
std::vector<activity_record> sample() {
  const std::string k1 = "void ns::k1<int>(float*, int)";
  std::vector<activity_record> v;
  v.push_back(rec(activity_kind::kernel, 1150, 1250, 10, 0, k1));  // out of order on purpose
  v.push_back(rec(activity_kind::kernel, 1000, 1100, 10, 0, k1));
  v.push_back(rec(activity_kind::kernel, 1050, 1120, 11, 1, "k2(double)"));
  v.push_back(rec(activity_kind::kernel, 1300, 1400, 12, 2, k1));
  auto c = rec(activity_kind::memcpy, 900, 950, 11, 1, "memcpy HtoD");
  c.bytes = 4096;
  v.push_back(c);
  auto s = rec(activity_kind::synchronization, 1500, 1600, 0, -1, "cudaStreamSynchronize");
  s.blocks_host = true;
  v.push_back(s);
  for (auto& r : v) {
    if (r.kind == activity_kind::kernel) {
      r.grid = {32, 32, 1};
      r.block = {32, 8, 1};
    }
  }
  return v;
}

TEST(timeline_stats, exact_values_of_a_small_timeline) {
  const auto st = vox::profile::compute_stats(sample());
  EXPECT_EQ(st.kernels, 4u);
  EXPECT_EQ(st.copies, 1u);
  EXPECT_EQ(st.host_waits, 1u);
  EXPECT_EQ(st.span_ns, 400u);    // 1000 .. 1400
  EXPECT_EQ(st.kernel_ns, 370u);  // 100 + 100 + 70 + 100
  EXPECT_DOUBLE_EQ(st.concurrency, 370.0 / 400.0);
  EXPECT_EQ(st.max_concurrent, 2u);  // k1 and k2 in [1050, 1100)
  EXPECT_EQ(st.gaps, 1u);
  EXPECT_EQ(st.max_gap_ns, 50u);
  EXPECT_DOUBLE_EQ(st.mean_gap_ns, 50.0);
  EXPECT_FALSE(st.host_ops);
  ASSERT_EQ(st.streams.size(), 3u);
  EXPECT_EQ(st.streams[0].stream, 10u);
  EXPECT_EQ(st.streams[0].stream_index, 0);
  EXPECT_EQ(st.streams[0].kernels, 2u);
  EXPECT_EQ(st.streams[0].busy_ns, 200u);
  EXPECT_EQ(st.streams[1].stream, 11u);
  EXPECT_EQ(st.streams[1].kernels, 1u);
  EXPECT_EQ(st.streams[1].busy_ns, 70u);
  EXPECT_EQ(st.streams[2].stream, 12u);
  EXPECT_EQ(st.streams[2].busy_ns, 100u);
  const std::string s = st.summary();
  EXPECT_NE(s.find("4 kernels on 3 streams"), std::string::npos) << s;
  EXPECT_NE(s.find("concurrency 0.9"), std::string::npos) << s;
  EXPECT_NE(s.find("at most 2 at once"), std::string::npos) << s;
  EXPECT_NE(s.find("1 gap (largest 50 ns, mean 50 ns)"), std::string::npos) << s;
}

TEST(timeline_stats, touching_intervals_do_not_overlap) {
  std::vector<activity_record> v{rec(activity_kind::kernel, 0, 10, 1, 0, "a()"),
                                 rec(activity_kind::kernel, 10, 20, 2, 1, "a()"),
                                 rec(activity_kind::kernel, 20, 30, 3, 2, "a()")};
  const auto st = vox::profile::compute_stats(v);
  EXPECT_EQ(st.max_concurrent, 1u);
  EXPECT_EQ(st.span_ns, 30u);
  EXPECT_DOUBLE_EQ(st.concurrency, 1.0);
  EXPECT_EQ(st.gaps, 0u);  // gaps are per stream, and each stream ran one kernel
}

TEST(timeline_stats, many_at_once_and_busy_time_as_a_union) {
  // Eight kernels of 100 ns starting 10 ns apart on eight streams: all overlap in [70, 100).
  std::vector<activity_record> v;
  for (std::uint64_t i = 0; i < 8; ++i)
    v.push_back(rec(activity_kind::kernel, 10 * i, 10 * i + 100, 100 + i,
                    static_cast<std::int64_t>(i), "k()"));
  // Overlapping records on one stream count once in its busy time; the next starts 5 ns after.
  v.push_back(rec(activity_kind::kernel, 1000, 1010, 200, 8, "k()"));
  v.push_back(rec(activity_kind::kernel, 1005, 1015, 200, 8, "k()"));
  v.push_back(rec(activity_kind::kernel, 1020, 1030, 200, 8, "k()"));
  const auto st = vox::profile::compute_stats(v);
  EXPECT_EQ(st.max_concurrent, 8u);
  EXPECT_EQ(st.kernels, 11u);
  EXPECT_EQ(st.span_ns, 1030u);
  EXPECT_EQ(st.kernel_ns, 8u * 100 + 30);
  ASSERT_EQ(st.streams.size(), 9u);
  EXPECT_EQ(st.streams[8].busy_ns, 25u);  // [1000,1015) + [1020,1030)
  EXPECT_EQ(st.gaps, 1u);
  EXPECT_EQ(st.max_gap_ns, 5u);
}

TEST(timeline_stats, empty_and_zero_length) {
  const auto e = vox::profile::compute_stats({});
  EXPECT_EQ(e.kernels, 0u);
  EXPECT_EQ(e.span_ns, 0u);
  EXPECT_EQ(e.concurrency, 0.0);
  EXPECT_EQ(e.max_concurrent, 0u);
  EXPECT_EQ(e.summary(), "0 kernels on 0 streams");
  // A zero-length kernel counts as a kernel but never as running.
  const auto z = vox::profile::compute_stats({rec(activity_kind::kernel, 5, 5, 1, 0, "k()")});
  EXPECT_EQ(z.kernels, 1u);
  EXPECT_EQ(z.max_concurrent, 0u);
  EXPECT_EQ(z.concurrency, 0.0);
}

TEST(timeline_stats, host_op_slabs_and_stream_order) {
  std::vector<activity_record> v{rec(activity_kind::op, 0, 10, 77, -1, "fill"),
                                 rec(activity_kind::op, 10, 20, 5, 1, "fill"),
                                 rec(activity_kind::op, 20, 40, 9, 0, "copy")};
  const auto st = vox::profile::compute_stats(v);
  EXPECT_TRUE(st.host_ops);
  ASSERT_EQ(st.streams.size(), 3u);
  EXPECT_EQ(st.streams[0].stream, 9u);   // index 0
  EXPECT_EQ(st.streams[1].stream, 5u);   // index 1
  EXPECT_EQ(st.streams[2].stream, 77u);  // not in the set: last
  EXPECT_NE(st.summary().find("3 op slabs on 3 streams"), std::string::npos) << st.summary();
}

TEST(timeline_names, display_name_and_demangle) {
  using vox::profile::display_name;
  EXPECT_EQ(display_name("void ns::k1<int>(float*, int)"), "ns::k1<int>");
  EXPECT_EQ(display_name("simple_copy(float const*, float*, unsigned long, int)"), "simple_copy");
  EXPECT_EQ(display_name("void cub::detail::static_kernel<P, (anonymous namespace)::op>(long)"),
            "cub::detail::static_kernel<P, (anonymous namespace)::op>");
  EXPECT_EQ(display_name("(anonymous namespace)::k(int)"), "(anonymous namespace)::k");
  EXPECT_EQ(display_name("memcpy HtoD"), "memcpy HtoD");
  EXPECT_EQ(display_name("fill"), "fill");
  EXPECT_EQ(vox::profile::demangle("_Z11simple_copyPKfPfmmmi"),
            "simple_copy(float const*, float*, unsigned long, unsigned long, unsigned long, int)");
  EXPECT_EQ(vox::profile::demangle("not_mangled"), "not_mangled");
}

TEST(timeline_trace, chrome_json_parses_and_has_exact_events) {
  auto v = sample();
  v[2].name = "k\"2\\\n(double)";  // needs escaping
  const std::string text = vox::profile::chrome_trace_json(v);
  const voxtest::json j = voxtest::parse_json(text);
  EXPECT_EQ(j.at("displayTimeUnit").str, "ns");
  const auto& ev = j.at("traceEvents").arr;
  std::size_t kernels = 0;
  std::size_t copies = 0;
  std::size_t syncs = 0;
  std::map<int, std::string> thread_names;  // (pid 1) tid -> name
  const voxtest::json* first_k1 = nullptr;
  for (const auto& e : ev) {
    const std::string ph = e.at("ph").str;
    if (ph == "M") {
      if (e.at("name").str == "thread_name" && e.at("pid").num == 1)
        thread_names[static_cast<int>(e.at("tid").num)] = e.at("args").at("name").str;
      continue;
    }
    ASSERT_EQ(ph, "X");
    const std::string cat = e.at("cat").str;
    if (cat == "kernel") {
      ++kernels;
      EXPECT_EQ(e.at("pid").num, 1);
      if (first_k1 == nullptr && e.at("name").str == "ns::k1<int>") first_k1 = &e;
    }
    if (cat == "memcpy") {
      ++copies;
      EXPECT_EQ(e.at("args").at("bytes").num, 4096);
      EXPECT_EQ(e.at("ts").num, 0.0);  // the earliest record
    }
    if (cat == "synchronization") {
      ++syncs;
      EXPECT_EQ(e.at("pid").num, 2);
      EXPECT_TRUE(e.at("args").at("blocks_host").b);
    }
  }
  EXPECT_EQ(kernels, 4u);
  EXPECT_EQ(copies, 1u);
  EXPECT_EQ(syncs, 1u);
  ASSERT_NE(first_k1, nullptr);
  // [1000, 1100] ns with the trace starting at 900 ns: ts 0.1 us, dur 0.1 us.
  EXPECT_NE(text.find("\"ts\":0.100,\"dur\":0.100"), std::string::npos);
  EXPECT_DOUBLE_EQ(first_k1->at("ts").num, 0.1);
  EXPECT_DOUBLE_EQ(first_k1->at("dur").num, 0.1);
  EXPECT_EQ(first_k1->at("tid").num, 1);
  EXPECT_EQ(first_k1->at("args").at("grid").str, "32x32x1");
  EXPECT_EQ(first_k1->at("args").at("block").str, "32x8x1");
  EXPECT_EQ(first_k1->at("args").at("kernel").str, "void ns::k1<int>(float*, int)");
  EXPECT_EQ(thread_names[1], "stream 0");
  EXPECT_EQ(thread_names[2], "stream 1");
  EXPECT_EQ(thread_names[3], "stream 2");
  EXPECT_EQ(thread_names[4], "stream id 0");
  // The escaped name survives the round trip.
  bool found = false;
  for (const auto& e : ev)
    if (e.at("ph").str == "X" && e.at("name").str == "k\"2\\\n") found = true;
  EXPECT_TRUE(found) << "display_name of a name with a quote, a backslash and a newline";
  EXPECT_EQ(j.at("otherData").at("kernels").num, 4);
  EXPECT_EQ(j.at("otherData").at("max_concurrent").num, 2);
}

// CUDA runtime calls (api records) on two host threads, with the sample's device records:
// counted, summed per name (longest total first), kept out of the work statistics and the SVG,
// and put in the trace as process 3 with one thread per calling thread.
TEST(timeline_api, calls_are_summed_per_name_and_traced_apart_from_the_device) {
  auto v = sample();
  v.push_back(rec(activity_kind::api, 800, 805, 7001, -1, "cudaLaunchKernel"));
  v.push_back(rec(activity_kind::api, 810, 816, 7001, -1, "cudaLaunchKernel"));
  v.push_back(rec(activity_kind::api, 820, 821, 7001, -1, "cudaEventRecord"));
  v.push_back(rec(activity_kind::api, 830, 850, 7002, -1, "cudaMallocFromPoolAsync"));
  const auto st = vox::profile::compute_stats(v);
  EXPECT_EQ(st.api_calls, 4u);
  EXPECT_EQ(st.api_ns, 32u);
  ASSERT_EQ(st.api.size(), 3u);
  EXPECT_EQ(st.api[0].name, "cudaMallocFromPoolAsync");
  EXPECT_EQ(st.api[0].calls, 1u);
  EXPECT_EQ(st.api[0].total_ns, 20u);
  EXPECT_EQ(st.api[1].name, "cudaLaunchKernel");
  EXPECT_EQ(st.api[1].calls, 2u);
  EXPECT_EQ(st.api[1].total_ns, 11u);
  EXPECT_EQ(st.api[2].name, "cudaEventRecord");
  // The work statistics are those of the sample alone.
  const auto base = vox::profile::compute_stats(sample());
  EXPECT_EQ(st.kernels, base.kernels);
  EXPECT_EQ(st.span_ns, base.span_ns);
  EXPECT_EQ(st.streams.size(), base.streams.size());
  EXPECT_EQ(st.copies, base.copies);
  EXPECT_NE(st.summary().find(", host API 32 ns in 4 calls"), std::string::npos)
      << st.summary();
  EXPECT_EQ(base.summary().find("host API"), std::string::npos);

  const voxtest::json j = voxtest::parse_json(vox::profile::chrome_trace_json(v));
  std::size_t calls = 0;
  std::map<int, std::string> threads;  // (pid 3) tid -> name
  for (const auto& e : j.at("traceEvents").arr) {
    if (e.at("ph").str == "M") {
      if (e.at("name").str == "thread_name" && e.at("pid").num == 3)
        threads[static_cast<int>(e.at("tid").num)] = e.at("args").at("name").str;
      continue;
    }
    if (e.at("cat").str != "api") continue;
    ++calls;
    EXPECT_EQ(e.at("pid").num, 3);
    const double thread = e.at("args").at("thread").num;
    EXPECT_EQ(e.at("tid").num, thread == 7001 ? 1 : 2);
  }
  EXPECT_EQ(calls, 4u);
  EXPECT_EQ(threads[1], "thread 7001");
  EXPECT_EQ(threads[2], "thread 7002");
  EXPECT_EQ(j.at("otherData").at("api_calls").num, 4);
  EXPECT_EQ(j.at("otherData").at("kernels").num, 4);
  // The trace starts at the earliest record, now the first call (800 ns): the copy at 900 ns
  // is at 0.1 us.
  for (const auto& e : j.at("traceEvents").arr)
    if (e.at("ph").str == "X" && e.at("cat").str == "memcpy") {
      EXPECT_DOUBLE_EQ(e.at("ts").num, 0.1);
    }

  const voxtest::xml_summary x = voxtest::check_xml(vox::profile::timeline_svg(v));
  EXPECT_EQ(x.classes.at("rect.k"), 4u);
  EXPECT_EQ(x.classes.at("rect.c"), 1u);
  EXPECT_EQ(x.classes.at("rect.lane"), 3u);  // no lane for the calling threads
  EXPECT_EQ(std::string(vox::profile::activity_kind_name(activity_kind::api)), "api");
}

TEST(timeline_trace, empty_trace_is_valid_json) {
  const voxtest::json j = voxtest::parse_json(vox::profile::chrome_trace_json({}));
  std::size_t x = 0;
  for (const auto& e : j.at("traceEvents").arr) x += e.at("ph").str == "X" ? 1 : 0;
  EXPECT_EQ(x, 0u);
}

TEST(timeline_svg, well_formed_with_one_bar_per_record_and_one_lane_per_stream) {
  vox::profile::svg_options o;
  o.title = "a<b & \"c\"";
  const std::string svg = vox::profile::timeline_svg(sample(), o);
  const voxtest::xml_summary x = voxtest::check_xml(svg);
  EXPECT_EQ(x.elements.at("svg"), 1u);
  EXPECT_EQ(x.classes.at("rect.k"), 4u);     // one bar per kernel
  EXPECT_EQ(x.classes.at("rect.c"), 1u);     // the copy
  EXPECT_EQ(x.classes.at("rect.lane"), 3u);  // streams 10, 11, 12 (the host wait has no lane)
  EXPECT_EQ(x.classes.at("rect.sw"), 3u);    // legend: ns::k1<int>, k2, memcpy HtoD
  auto has_text = [&](const std::string& t) {
    for (const auto& s : x.texts)
      if (s.find(t) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has_text("a<b & \"c\""));  // the title, escaped and decoded again
  EXPECT_TRUE(has_text("stream 0"));
  EXPECT_TRUE(has_text("stream 1"));
  EXPECT_TRUE(has_text("stream 2"));
  EXPECT_TRUE(has_text("ns::k1<int> x3"));
  EXPECT_TRUE(has_text("k2 x1"));
  EXPECT_TRUE(has_text("memcpy HtoD x1"));
  EXPECT_TRUE(has_text("4 kernels on 3 streams"));
  // Axis: 500 ns drawn, ticks every 50 ns, labelled in microseconds.
  EXPECT_TRUE(has_text("0 \xC2\xB5s"));
  EXPECT_TRUE(has_text("0.25 \xC2\xB5s"));
  EXPECT_TRUE(has_text("0.5 \xC2\xB5s"));
  EXPECT_EQ(x.classes.at("line.tick"), 11u);
}

TEST(timeline_svg, milliseconds_and_many_names) {
  std::vector<activity_record> v;
  for (int i = 0; i < 20; ++i)  // more names than colours: the rest share "other"
    v.push_back(rec(activity_kind::kernel, 1000000ull * i, 1000000ull * i + 500000, 1, 0,
                    "kernel_" + std::to_string(i) + "()"));
  const voxtest::xml_summary x = voxtest::check_xml(vox::profile::timeline_svg(v));
  EXPECT_EQ(x.classes.at("rect.k"), 20u);
  EXPECT_EQ(x.classes.at("rect.lane"), 1u);
  EXPECT_EQ(x.classes.at("rect.sw"), 13u);  // 12 colours and "other"
  bool ms = false;
  bool other = false;
  for (const auto& s : x.texts) {
    ms = ms || s == "10 ms";
    other = other || s.find("other (8 names) x8") != std::string::npos;
  }
  EXPECT_TRUE(ms);
  EXPECT_TRUE(other);
}

class atomic_write : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("voxstream_profile_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::size_t files() const {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_)) {
      (void)e;
      ++n;
    }
    return n;
  }
  fs::path dir_;
};

TEST_F(atomic_write, writes_replaces_and_leaves_no_temporary) {
  const std::string p = (dir_ / "t.json").string();
  vox::profile::write_file_atomic(p, "first, longer contents\n");
  EXPECT_EQ(voxtest::read_file(p), "first, longer contents\n");
  vox::profile::write_file_atomic(p, "second");
  EXPECT_EQ(voxtest::read_file(p), "second");  // replaced whole, not overwritten in place
  vox::profile::write_file_atomic(p, "");
  EXPECT_EQ(voxtest::read_file(p), "");
  EXPECT_EQ(files(), 1u);
}

TEST_F(atomic_write, failure_throws_naming_the_path_and_changes_nothing) {
  const std::string missing = (dir_ / "no_such_dir" / "t.svg").string();
  try {
    vox::profile::write_file_atomic(missing, "x");
    FAIL() << "expected vox::error";
  } catch (const vox::error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_EQ(files(), 0u);
  // The target is a directory: the rename fails and the temporary is removed.
  fs::create_directories(dir_ / "d");
  fs::create_directories(dir_ / "d" / "inner");
  EXPECT_THROW(vox::profile::write_file_atomic((dir_ / "d").string(), "x"), vox::error);
  EXPECT_EQ(files(), 1u);
  EXPECT_THROW(vox::profile::write_file_atomic("", "x"), vox::invalid_argument);
}

}  // namespace voxtest_timeline_pure
