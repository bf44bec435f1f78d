#include "harness/common/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/common/errors.h"
#include "harness/common/process.h"
#include "tests/common/scratch_dir.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

fs::path files_scratch(const std::string& name) { return empty_scratch_dir("files_test_" + name); }

std::string contents(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t entries(const fs::path& directory) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(directory), fs::directory_iterator()));
}

TEST(Files, WriteReplacesARegularFileAndLeavesNoTemporary) {
  const fs::path dir = files_scratch("replace");
  const fs::path file = dir / "record.json";
  std::ofstream(file) << "old";
  write_file_atomically(file.string(), "new");
  EXPECT_EQ(contents(file), "new");
  EXPECT_EQ(entries(dir), 1U);
  struct stat info {};
  ASSERT_EQ(::stat(file.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644U);
}

// Someone who prepared the directory must not be able to make the harness write elsewhere.
TEST(Files, WriteRefusesALinkAndLeavesItsTargetUntouched) {
  const fs::path dir = files_scratch("link");
  const fs::path target = dir / "precious.txt";
  std::ofstream(target) << "precious";
  fs::create_symlink(target, dir / "record.json");
  try {
    write_file_atomically((dir / "record.json").string(), "overwritten");
    FAIL() << "wrote through a symbolic link";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              (dir / "record.json").string() + ": is a symbolic link, expected a file the harness writes");
  }
  EXPECT_EQ(contents(target), "precious");
  EXPECT_TRUE(fs::is_symlink(dir / "record.json"));
  EXPECT_EQ(entries(dir), 2U) << "a temporary file was left behind";
}

TEST(Files, WriteRefusesADirectoryAndADeviceInOneLine) {
  const fs::path dir = files_scratch("special");
  fs::create_directories(dir / "record.json");
  EXPECT_THROW(write_file_atomically((dir / "record.json").string(), "x"), Error);
  try {
    write_file_atomically("/dev/null", "x");
    FAIL() << "replaced /dev/null";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "/dev/null: is a character device, expected a file the harness writes");
  }
  struct stat info {};
  ASSERT_EQ(::stat("/dev/null", &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode));
}

TEST(Files, WriteIntoAMissingDirectoryNamesThePathAndWhy) {
  const fs::path dir = files_scratch("missing");
  const std::string path = (dir / "points" / "p000.json").string();
  try {
    write_file_atomically(path, "x");
    FAIL() << "wrote into a missing directory";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(path + ": cannot create a temporary file beside it: ", 0), 0U) << message;
    EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(Files, ReplaceRenamesATemporaryIntoPlaceButNotOverALink) {
  const fs::path dir = files_scratch("replace_file");
  std::ofstream(dir / "drawn.svg") << "new plot";
  replace_file((dir / "drawn.svg").string(), (dir / "plot.svg").string());
  EXPECT_EQ(contents(dir / "plot.svg"), "new plot");
  EXPECT_FALSE(fs::exists(dir / "drawn.svg"));

  std::ofstream(dir / "target") << "precious";
  fs::create_symlink(dir / "target", dir / "linked.svg");
  std::ofstream(dir / "drawn.svg") << "new plot";
  EXPECT_THROW(replace_file((dir / "drawn.svg").string(), (dir / "linked.svg").string()), Error);
  EXPECT_EQ(contents(dir / "target"), "precious");
  EXPECT_TRUE(fs::is_symlink(dir / "linked.svg"));
  EXPECT_FALSE(fs::exists(dir / "drawn.svg")) << "the refused temporary was left behind";
}

// A record replaced by a link (to a secret, say) is refused without a byte of the target read: a
// syntax error would otherwise quote its first bytes. A FIFO is refused without waiting for a writer.
TEST(Files, ReadJsonRefusesALinkAndAFifoWithoutReadingThem) {
  const fs::path dir = files_scratch("read_link");
  std::ofstream(dir / "secret") << "\"SECRET_TOKEN=abc\n";
  fs::create_symlink(dir / "secret", dir / "record.json");
  try {
    read_json_file((dir / "record.json").string());
    FAIL() << "read through a symbolic link";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), (dir / "record.json").string() +
                                             ": is a symbolic link, expected a JSON file the harness writes (a link "
                                             "is never followed)");
  }
  ASSERT_EQ(::mkfifo((dir / "fifo.json").c_str(), 0644), 0);
  try {
    read_json_file((dir / "fifo.json").string());
    FAIL() << "read a FIFO";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              (dir / "fifo.json").string() + ": is a FIFO (named pipe), expected a JSON file");
  }
  std::ofstream(dir / "plain.json") << R"({"a": 1})";
  EXPECT_EQ(read_json_file((dir / "plain.json").string())["a"], 1);
}

// A point's log and a job's status file are read back from a directory others may write in: never
// through a link planted there, whose target's lines would end up in a failed point's reason.
TEST(Files, LogsAndStatusFilesAreNeverReadThroughALink) {
  const fs::path dir = files_scratch("plain_link");
  std::ofstream(dir / "secret") << "SECRET_TOKEN=abc\nharness worker (rank 0): SECRET_TOKEN=abc\nstarted 1 host\n";
  fs::create_symlink(dir / "secret", dir / "point.log");
  EXPECT_FALSE(open_plain_file((dir / "point.log").string()));
  EXPECT_TRUE(tail_lines((dir / "point.log").string(), 20).empty());
  EXPECT_TRUE(head_lines((dir / "point.log").string(), 20).empty());
  ASSERT_EQ(::mkfifo((dir / "fifo.log").c_str(), 0644), 0);
  EXPECT_FALSE(open_plain_file((dir / "fifo.log").string()));  // and never waits for a writer
  // The same file, not a link: read.
  EXPECT_EQ(tail_lines((dir / "secret").string(), 1), std::vector<std::string>{"started 1 host"});
  EXPECT_EQ(head_lines((dir / "secret").string(), 1), std::vector<std::string>{"SECRET_TOKEN=abc"});
}

TEST(Files, RenameDurablyMovesAFileButNotOverALink) {
  const fs::path dir = files_scratch("rename_durably");
  std::ofstream(dir / "p000.json") << "record";
  rename_durably((dir / "p000.json").string(), (dir / "p000.json.superseded").string());
  EXPECT_EQ(contents(dir / "p000.json.superseded"), "record");
  EXPECT_FALSE(fs::exists(dir / "p000.json"));

  std::ofstream(dir / "target") << "precious";
  fs::create_symlink(dir / "target", dir / "p000.json");
  EXPECT_THROW(rename_durably((dir / "p000.json.superseded").string(), (dir / "p000.json").string()), Error);
  EXPECT_EQ(contents(dir / "target"), "precious");
  EXPECT_EQ(contents(dir / "p000.json.superseded"), "record");
}

}  // namespace
}  // namespace harness
