// The output guard (issue 18): temporary names of the library's writers, the writability check
// before any work, the sweep of temporaries left by killed runs, and this process's own cleanup.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "output_guard.hpp"

namespace {

namespace fs = std::filesystem;
using vox::cli::temp_name;

/// The pid of a process that has ended (a child that exits at once, reaped).
long dead_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  int st = 0;
  ::waitpid(p, &st, 0);
  return static_cast<long>(p);
}

class Guard : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("voxstream_guard_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void touch(const std::string& name) const { std::ofstream(dir_ / name) << "x"; }
  [[nodiscard]] bool has(const std::string& name) const { return fs::exists(dir_ / name); }
  fs::path dir_;
};

TEST(TempName, ParsesTheLibrarysPattern) {
  temp_name t;
  ASSERT_TRUE(vox::cli::parse_temp_name(".out.nrrd.tmp1234.0", t));
  EXPECT_EQ(t.target, "out.nrrd");
  EXPECT_EQ(t.pid, 1234);
  ASSERT_TRUE(vox::cli::parse_temp_name(".a.tmp.b.raw.gz.tmp7.12", t));
  EXPECT_EQ(t.target, "a.tmp.b.raw.gz");
  EXPECT_EQ(t.pid, 7);
  for (const char* no : {"out.nrrd", ".out.nrrd", ".out.nrrd.tmp.0", ".out.nrrd.tmp12.", ".tmp1.2",
                         ".out.nrrd.tmp12.x", "out.nrrd.tmp12.0", ".out.tmpx1.0"})
    EXPECT_FALSE(vox::cli::parse_temp_name(no, t)) << no;
}

TEST(TempName, BelongsToTheOutputAndItsDataFile) {
  EXPECT_TRUE(vox::cli::temp_belongs_to("x.nhdr", "x.nhdr"));
  EXPECT_TRUE(vox::cli::temp_belongs_to("x.raw", "x.nhdr"));
  EXPECT_TRUE(vox::cli::temp_belongs_to("x.raw.gz", "x.nhdr"));
  EXPECT_FALSE(vox::cli::temp_belongs_to("xy.raw", "x.nhdr"));
  EXPECT_FALSE(vox::cli::temp_belongs_to("y.nrrd", "x.nrrd"));
}

TEST_F(Guard, WritableCheckNamesWhatIsWrong) {
  EXPECT_NO_THROW(vox::cli::check_output_writable(dir_ / "a.nrrd"));
  EXPECT_TRUE(fs::is_empty(dir_));  // the probe file is gone
  try {
    vox::cli::check_output_writable(dir_ / "missing" / "a.nrrd");
    ADD_FAILURE() << "no error for a missing directory";
  } catch (const vox::cli::output_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  touch("file");
  EXPECT_THROW(vox::cli::check_output_writable(dir_ / "file" / "a.nrrd"), vox::cli::output_error);
  fs::create_directories(dir_ / "sub");
  EXPECT_THROW(vox::cli::check_output_writable(dir_ / "sub"), vox::cli::output_error);
}

TEST_F(Guard, SweepRemovesOnlyStaleTemporariesOfTheOutput) {
  const std::string dead = std::to_string(dead_pid());
  const std::string alive = std::to_string(::getpid());
  touch(".out.nrrd.tmp" + dead + ".0");
  touch(".out.raw.tmp" + dead + ".3");     // a detached header's data file
  touch(".out.nrrd.tmp" + alive + ".1");   // a running writer's: kept
  touch(".other.nrrd.tmp" + dead + ".0");  // another output's: kept
  touch("out.nrrd");                       // the output itself: kept
  EXPECT_EQ(vox::cli::sweep_stale_temporaries(dir_ / "out.nrrd"), 2u);
  EXPECT_FALSE(has(".out.nrrd.tmp" + dead + ".0"));
  EXPECT_FALSE(has(".out.raw.tmp" + dead + ".3"));
  EXPECT_TRUE(has(".out.nrrd.tmp" + alive + ".1"));
  EXPECT_TRUE(has(".other.nrrd.tmp" + dead + ".0"));
  EXPECT_TRUE(has("out.nrrd"));
}

TEST_F(Guard, OwnTemporariesAreRemoved) {
  const std::string self = std::to_string(::getpid());
  const std::string other = std::to_string(dead_pid());
  touch(".a.nrrd.tmp" + self + ".0");
  touch(".b.raw.tmp" + self + ".7");
  touch(".a.nrrd.tmp" + other + ".0");
  EXPECT_EQ(vox::cli::remove_own_temporaries(dir_), 2u);
  EXPECT_FALSE(has(".a.nrrd.tmp" + self + ".0"));
  EXPECT_TRUE(has(".a.nrrd.tmp" + other + ".0"));
}

}  // namespace
