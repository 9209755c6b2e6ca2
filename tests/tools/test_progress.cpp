// Progress formatting (pure) and the reporter's output in bar and plain mode.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>

#include "progress.hpp"

namespace {

using vox::cli::format_bar;
using vox::cli::format_duration;
using vox::cli::format_plain;
using vox::cli::format_rate;
using vox::cli::plain_line_due;

TEST(Progress, Durations) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(9.4), "9s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(65), "1m05s");
  EXPECT_EQ(format_duration(3599), "59m59s");
  EXPECT_EQ(format_duration(3600 * 2 + 3 * 60 + 10), "2h03m");
  EXPECT_EQ(format_duration(-1), "--");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "--");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::quiet_NaN()), "--");
}

TEST(Progress, Rates) {
  EXPECT_EQ(format_rate(3.14, "slabs"), "3.1 slabs/s");
  EXPECT_EQ(format_rate(0.456, "slabs"), "0.46 slabs/s");
  EXPECT_EQ(format_rate(123.4, "slabs"), "123 slabs/s");
  EXPECT_EQ(format_rate(-1, "slabs"), "-- slabs/s");
}

TEST(Progress, Bar) {
  // 12 of 40 slabs after 12 / 3.1 s: 3 of 10 cells, 3.1 slabs/s, 28 slabs left = 9 s.
  EXPECT_EQ(format_bar(12, 40, 12 / 3.1), "[###-------] 12/40 slabs  3.1 slabs/s  ETA 9s");
  EXPECT_EQ(format_bar(0, 40, 0.5), "[----------] 0/40 slabs  -- slabs/s  ETA --");
  EXPECT_EQ(format_bar(20, 40, 10), "[#####-----] 20/40 slabs  2.0 slabs/s  ETA 10s");
  EXPECT_EQ(format_bar(40, 40, 20), "[##########] 40/40 slabs  2.0 slabs/s  done in 20s");
  EXPECT_EQ(format_bar(1, 3, 1, "slabs", 6), "[##----] 1/3 slabs  1.0 slabs/s  ETA 2s");
  // More done than total is shown as total.
  EXPECT_EQ(format_bar(5, 4, 2), "[##########] 4/4 slabs  2.0 slabs/s  done in 2s");
  // A long job: minutes in the ETA.
  EXPECT_EQ(format_bar(1, 1000, 1), "[----------] 1/1000 slabs  1.0 slabs/s  ETA 16m39s");
}

TEST(Progress, Plain) {
  EXPECT_EQ(format_plain("run", 12, 40, 12 / 3.1),
            "run: 12/40 slabs (30%)  3.1 slabs/s  ETA 9s");
  EXPECT_EQ(format_plain("run", 40, 40, 12), "run: 40/40 slabs (100%) in 12s  3.3 slabs/s");
}

TEST(Progress, PlainLinesEveryTenPercent) {
  // 40 slabs: the first, then each 10% step (4, 8, ..., 40).
  std::size_t last = 0;
  std::string shown;
  for (std::size_t d = 1; d <= 40; ++d)
    if (plain_line_due(last, d, 40)) {
      shown += std::to_string(d) + " ";
      last = d;
    }
  EXPECT_EQ(shown, "1 4 8 12 16 20 24 28 32 36 40 ");
  // Three slabs: every one.
  EXPECT_TRUE(plain_line_due(0, 1, 3));
  EXPECT_TRUE(plain_line_due(1, 2, 3));
  EXPECT_TRUE(plain_line_due(2, 3, 3));
  EXPECT_FALSE(plain_line_due(3, 3, 3));
  EXPECT_FALSE(plain_line_due(0, 0, 3));
  EXPECT_FALSE(plain_line_due(0, 1, 0));
}

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[256];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

TEST(Progress, ReporterPlainMode) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    vox::cli::progress_reporter r("job", "slabs", vox::cli::progress_mode::automatic, f);
    EXPECT_EQ(r.mode(), vox::cli::progress_mode::plain);  // a file is not a terminal
    for (std::size_t d = 1; d <= 20; ++d) r.update(d, 20);
  }
  const std::string out = read_all(f);
  std::fclose(f);
  // Lines at 1, 2, 4, ..., 20: 11 lines, no carriage returns.
  std::size_t lines = 0;
  for (char c : out) lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 11u) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_NE(out.find("job: 20/20 slabs (100%) in "), std::string::npos) << out;
}

TEST(Progress, ReporterBarMode) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    vox::cli::progress_reporter r("job", "slabs", vox::cli::progress_mode::bar, f);
    r.update(1, 2);
    r.update(2, 2);  // the last state is always drawn, and ends the line
  }
  const std::string out = read_all(f);
  std::fclose(f);
  EXPECT_EQ(out.rfind("\rjob [#####-----] 1/2 slabs", 0), 0u) << out;
  EXPECT_NE(out.find("\rjob [##########] 2/2 slabs"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
  std::size_t lines = 0;
  for (char c : out) lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 1u);
}

TEST(Progress, ReporterOff) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    vox::cli::progress_reporter r("job", "slabs", vox::cli::progress_mode::off, f);
    r.update(1, 1);
  }
  EXPECT_EQ(read_all(f), "");
  std::fclose(f);
}

}  // namespace
